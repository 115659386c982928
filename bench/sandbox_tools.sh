#!/bin/bash
# Build .sandbox-tools/ (ignored) from this machine's Debian bubblewrap, for a GPU machine whose
# image lacks the package (the H200 image does): copy `.sandbox-tools` beside the checkout there;
# bench/gpu_env.sh puts it on PATH when no bwrap is installed.
set -e
cd "$(dirname "$0")/.."
mkdir -p .sandbox-tools/bin .sandbox-tools/lib
cp /usr/bin/bwrap .sandbox-tools/bwrap.real
for lib in $(ldd /usr/bin/bwrap | awk '/=> \// {print $3}' | grep -v -e libc.so -e ld-linux); do cp -L "$lib" .sandbox-tools/lib/; done
cat > .sandbox-tools/bin/bwrap <<'SH'
#!/bin/sh
DIR=$(dirname "$(dirname "$(readlink -f "$0")")")
exec /lib64/ld-linux-x86-64.so.2 --library-path "$DIR/lib" "$DIR/bwrap.real" "$@"
SH
chmod +x .sandbox-tools/bin/bwrap
grep -qx "/.sandbox-tools/" .git/info/exclude 2>/dev/null || echo "/.sandbox-tools/" >> "$(git rev-parse --git-path info/exclude)"
.sandbox-tools/bin/bwrap --version
