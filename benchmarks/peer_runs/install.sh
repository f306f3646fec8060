#!/usr/bin/env bash
# The peers' own virtualenv for `python -m benchmarks.peers` (TRL, CoMLRL): kept apart from
# teamgym's so their dependency pins cannot break ours. Usage: bash benchmarks/peer_runs/install.sh [DIR]
# (default .peers-venv in the repository root). The peer scripts import only teamgym's envs
# (torch-free) from the repository, on PYTHONPATH, for the rewards.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${1:-$here/../../.peers-venv}"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
# the CPU build of torch first, as .ci/run installs ours: a bare torch requirement would pull the
# multi-GB CUDA build
"$venv/bin/pip" install --quiet "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu
"$venv/bin/pip" install --quiet -r "$here/requirements.txt"
echo "peers installed in $venv: $("$venv/bin/python" -c 'import trl, comlrl; print("trl", trl.__version__, "comlrl", comlrl.__version__ if hasattr(comlrl, "__version__") else "?")')"
