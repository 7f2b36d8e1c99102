# Sourced by the node benchmarks' drivers on the GPU machine (repo root),
# with NAME set (the run's name: node, jobs): the GDAL bundle's environment
# (scripts/gpu-env.sh), $OUT, $MF (the build of carry/mapfilter-new.xz
# unpacked; BUILD=old takes carry/mapfilter-old.xz, to pair two builds in
# one call), $LOGS (each run's lines, packed into $OUT/$NAME-logs.tgz on
# exit: the device tool brings back a few files only), the timing helpers
# `now` and `since`, and `row`, which prints a JSON line and appends it to
# $OUT/$NAME.jsonl; the first row says the machine's cores and GPUs.
source scripts/gpu-env.sh
OUT=${OUT:-out/$NAME}; mkdir -p "$OUT"
LOGS=/tmp/$NAME-logs; rm -rf "$LOGS"; mkdir -p "$LOGS"
# shellcheck disable=SC2064
trap "tar -C '$LOGS' -czf '$OUT/$NAME-logs.tgz' ." EXIT
MF=/tmp/mf/bin/mapfilter-${BUILD:-new}
xz -dc "carry/mapfilter-${BUILD:-new}.xz" >"$MF" && chmod +x "$MF"
now() { date +%s.%N; }
since() { python3 -c "print(round($(now) - $1, 3))"; }
row() { echo "$1" | tee -a "$OUT/$NAME.jsonl"; }
C=$(nproc) G=$(nvidia-smi -L | wc -l)
row "{\"cores\":$C,\"gpus\":$G,\"build\":\"${BUILD:-new}\"}"
