# Shared by the one-call GPU scripts (round.sh, packing.sh); source it after setting DIR.
# step NAME SECONDS COMMAND...: runs COMMAND under a time limit, its output to DIR/NAME.out
# and DIR/NAME.err, and appends one line (exit status, milliseconds) to DIR/summary.txt.
step() {
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s%N)
  timeout "$limit" "$@" > "$DIR/$name.out" 2> "$DIR/$name.err"
  local rc=$?
  printf '%-28s rc=%-3s %6d ms\n' "$name" "$rc" $(( ($(date +%s%N) - t0) / 1000000 )) | tee -a "$DIR/summary.txt"
}
