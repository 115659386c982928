"""Many machines: evaluation workers as Ray actors (`pip install 'kernelevo[ray]'`).

Importing this package does not import Ray; `kernelevo.cluster.ray_dispatch` does.
"""
