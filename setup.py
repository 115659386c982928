"""Package layout (the rest of the metadata is in pyproject.toml): the engine `kernelevo`, and
the language server, kept in the `server/` folder, installed under the unique import name
`kernelevo_server` so it cannot collide with another top-level `server` package."""

from setuptools import find_namespace_packages, find_packages, setup

SERVER = ["kernelevo_server"] + [f"kernelevo_server.{p}" for p in find_packages("server")]

setup(
    # namespace discovery so the prompt folders (data only) count as packages, not as ignored ones
    packages=find_namespace_packages(
        include=["kernelevo", "kernelevo.*"], exclude=["*.__pycache__"]
    )
    + SERVER,
    package_dir={"kernelevo_server": "server"},
)
