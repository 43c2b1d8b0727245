#!/usr/bin/env bash
# Wheels that a GPU machine's image may lack (its python3 holds torch, transformers, peft, typer, rich,
# PyYAML, numpy, nvidia-ml-py and prometheus-client, but not pydantic), fetched here into .whl/ for Python
# 3.12 on x86-64, to be carried there. On that machine, before benchmarks/gpu_ground_truth.sh:
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
mkdir -p .whl
for spec in "pydantic==2.13.4" "pydantic-core==2.46.4" "annotated-types==0.7.0" "typing-inspection==0.4.2" \
            "typing-extensions==4.16.0"; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl "$spec"
done
ls .whl
