# Sourced before bench/gpu_bench.py on a GPU machine: install the wheels copied beside the checkout, set paths.
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# a bench step measures its own processes: `kernelevo verify` starts no background service here
# (bench/shell_latency.py asks for one explicitly)
export KERNELEVO_SERVICE="${KERNELEVO_SERVICE:-off}"
# a failing test's report is kept as it happens (tests/conftest.py), even when a time limit ends the run
export KERNELEVO_FAILURES="${KERNELEVO_FAILURES:-$OUT/failures.txt}"
# candidate code runs as an unprivileged uid only where the GPU's device nodes let any uid open them
if find /dev -maxdepth 1 -name 'nvidia*' -type c ! -perm -o=rw 2>/dev/null | grep -q .; then
  echo "GPU device nodes not world read-write: candidates stay uid 0 without capabilities"
  export KERNELEVO_SANDBOX_UID=0
fi
if ls .device-wheels/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .device-wheels/*.whl \
    && export PYTHONPATH="/tmp/site:$PYTHONPATH"
fi
# Hugging Face transformers and what it needs beyond the image (`pip download transformers==5.25.0`
# for the image's Python, less what torch already brings): for tests/test_targets_transformers.py,
# into the interpreter's own site-packages, since sandboxed workers import the tasks built from it
if ls .device-wheels/hf/*.whl >/dev/null 2>&1 && ! python3 -c "import transformers" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .device-wheels/hf/*.whl \
    || echo "transformers could not be installed here: its tests will fail to import it"
fi
# the model SDK and its dependencies, for the tokens benchmark alone (`pip download anthropic -d
# .device-wheels/llm` for the image's Python): kept off the path of everything else, whose
# packages (typing_extensions, ...) they would shadow
if ls .device-wheels/llm/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-llm .device-wheels/llm/*.whl \
    && export BENCH_LLM_SITE=/tmp/site-llm
fi
if ! command -v bwrap >/dev/null && [ -x .sandbox-tools/bin/bwrap ]; then  # the image has no bubblewrap
  export PATH="$PWD/.sandbox-tools/bin:$PATH"
fi
command -v bwrap >/dev/null || echo "no bubblewrap here: workers refuse to start; copy .sandbox-tools beside the checkout (bench/sandbox_tools.sh)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
