# Shared by the bench scripts: writes measured rows as JSON lines that
# scripts/render-benchmarks.py renders into BENCHMARKS.md's tables.
#
#   source scripts/lib/jsonl.sh
#   jsonl_table TABLE "COMMAND" COLUMN... [-- ALIGN]   # starts the table afresh
#   jsonl_row CELL...                                   # one row, cells in column order
#
# Rows go to benches/results/$BENCH_MACHINE/TABLE.jsonl (BENCH_MACHINE
# defaults to the host name; the committed tables use dev-2core, h100, h200),
# with today's date and the commit measured ($BENCH_COMMIT, else git's HEAD,
# else null). ALIGN is one letter per column, l or r (default all l).
# Python does the JSON quoting.

_jsonl_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

jsonl_table() {
  _jsonl_table=$1
  _jsonl_command=$2
  shift 2
  _jsonl_columns=()
  _jsonl_align=""
  while [ $# -gt 0 ]; do
    if [ "$1" = "--" ]; then
      _jsonl_align=$2
      break
    fi
    _jsonl_columns+=("$1")
    shift
  done
  _jsonl_row=0
  local machine=${BENCH_MACHINE:-$(hostname -s)}
  _jsonl_file=${BENCH_RESULTS:-$_jsonl_root/benches/results}/$machine/$_jsonl_table.jsonl
  _jsonl_machine=$machine
  _jsonl_commit=${BENCH_COMMIT:-$(git -C "$_jsonl_root" rev-parse --short=7 HEAD 2>/dev/null || true)}
  mkdir -p "$(dirname "$_jsonl_file")"
  : >"$_jsonl_file"
}

jsonl_row() {
  python3 - "$_jsonl_table" "$_jsonl_row" "$_jsonl_machine" "$(date -u +%Y-%m-%d)" \
    "$_jsonl_commit" "$_jsonl_command" "$_jsonl_align" "${#_jsonl_columns[@]}" \
    "${_jsonl_columns[@]}" "$@" >>"$_jsonl_file" <<'PY'
import json, sys
table, row, machine, date, commit, command, align, n = sys.argv[1:9]
n = int(n)
columns, figures = sys.argv[9:9 + n], sys.argv[9 + n:]
if len(figures) != n:
    sys.exit(f"jsonl_row: {len(figures)} cells for the {n} columns of table {table}")
print(json.dumps({"table": table, "row": int(row), "machine": machine, "date": date,
                  "commit": commit or None, "command": command, "columns": columns,
                  "align": align or "l" * n, "figures": figures}, ensure_ascii=False))
PY
  _jsonl_row=$((_jsonl_row + 1))
}
