# SciPy and NumPy for picollo-cli/tests/stat.rs: `picollo stat`'s Mann–Whitney U, bootstrap
# interval and summaries are checked against scipy.stats.mannwhitneyu and NumPy
# (tests/stat_reference.py). About 15 s of wheels from PyPI.
if ! python3 -c 'import scipy, numpy' 2>/dev/null; then
  command -v python3 >/dev/null 2>&1 || apt_install python3 python3-pip
  python3 -m pip install --quiet --disable-pip-version-check scipy numpy 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check --break-system-packages scipy numpy
fi
