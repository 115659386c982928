"""Which provider `kernelevo optimize` uses when none is named."""

from fakes.env import clean_llm_env

from kernelevo.optimize import default_provider


def test_default_provider_follows_keys_and_config(tmp_path, monkeypatch):
    config = clean_llm_env(monkeypatch, tmp_path)
    assert default_provider() == "offline"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    assert default_provider() == "openai"
    monkeypatch.delenv("OPENAI_API_KEY")
    config.parent.mkdir(parents=True)
    config.write_text('[providers.anthropic]\napi_key = "sk-ant-from-config"\n')
    assert (
        default_provider() == "anthropic"
    )  # a key in the config file counts, not only the environment


def test_an_unknown_provider_is_refused_before_anything_starts(tmp_path):
    import shutil

    from support import ROOT, run_kernelevo

    shutil.copy(ROOT / "examples" / "softmax.py", tmp_path)
    r = run_kernelevo(["optimize", "softmax.py", "--provider", "nope"], tmp_path, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("kernelevo: error: unknown provider 'nope': choose one of")
    assert r.stderr.count("\n") == 1 and "searching" not in r.stderr  # one line, nothing begun
    assert not (tmp_path / ".kernelevo" / "runs").exists()
    (tmp_path / "xdg" / "kernelevo").mkdir(parents=True)
    (tmp_path / "xdg" / "kernelevo" / "config.toml").write_text(
        '[providers.nope]\nbase_url = "http://127.0.0.1:9/v1"\n'
    )
    # a provider the config file defines is one: the next check speaks (no such run to resume)
    named = run_kernelevo(
        ["optimize", "softmax.py", "--provider", "nope", "--resume", "r0"], tmp_path, timeout=60
    )
    assert named.returncode == 2 and "no run 'r0'" in named.stderr, named.stderr


def test_doctor_says_what_optimize_will_search_with(tmp_path):
    """A config file naming a provider (through KERNELEVO_CONFIG too) is what optimize uses:
    doctor said 'No API key: offline search' while optimize would ask the paid model."""
    from support import run_kernelevo

    config = tmp_path / "good.toml"
    config.write_text('provider = "anthropic"\n[providers.anthropic]\napi_key = "sk-ant-fake123"\n')
    config.chmod(0o600)
    said = run_kernelevo(["doctor"], tmp_path, {"KERNELEVO_CONFIG": str(config)}).stdout
    assert "No API key" not in said
    assert f"asks anthropic (the config file {config})" in said
    assert "sk-ant-fake123" not in said
    plain = run_kernelevo(["doctor"], tmp_path).stdout
    assert "No API key: `kernelevo optimize` uses the offline search" in plain
    broken = run_kernelevo(["doctor"], tmp_path, {"KERNELEVO_CONFIG": str(tmp_path / "none.toml")})
    assert "The model configuration cannot be used" in broken.stdout
    assert "does not exist" in broken.stdout and broken.returncode == 0
