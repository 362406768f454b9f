# Sourced by scripts/test and scripts/demo: the project's virtualenv, filled by uv.
#
#   venv_install VENV ARGS...   create VENV (with $PYTHON, default python3) if missing,
#                               give it uv at the version constraints.txt pins (unless
#                               that uv is on PATH already), and
#                               `uv pip install ARGS` into it, pinned by constraints.txt.
# Afterwards VENV/bin is first on PATH and uv never downloads a Python of its own.

venv_install() {
  local venv=$1 root pinned outer_uv=0
  shift
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  pinned=$(sed -n 's/^uv==//p' "$root/constraints.txt")
  # The pinned uv already on PATH (a CI image's, the test run's own venv) makes the venv
  # and skips pip: `python -m venv` and pip installing uv cost seconds of CPU each time.
  [ "$(uv --version 2>/dev/null | cut -d" " -f1-2)" = "uv $pinned" ] && outer_uv=1
  if [ ! -x "$venv/bin/python" ]; then
    echo "Creating $venv..." >&2
    if [ "$outer_uv" = 1 ]; then
      UV_PYTHON_DOWNLOADS=never uv venv -q --seed --python "${PYTHON:-python3}" "$venv"
    else
      "${PYTHON:-python3}" -m venv "$venv"
    fi
  fi
  if [ "$outer_uv" = 0 ] && ! "$venv/bin/uv" --version 2>/dev/null | grep -qF "uv $pinned"; then
    # pip brings only uv, at its pinned version; uv installs the rest in seconds.
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "uv==$pinned" 2>&1 \
      | grep -v "is ignored: it is neither a file nor a directory" || true
  fi
  export PATH="$venv/bin:$PATH" UV_PYTHON_DOWNLOADS=never
  (cd "$root" && uv pip install -q --python "$venv/bin/python" -c constraints.txt \
    --build-constraint constraints.txt "$@")
}
