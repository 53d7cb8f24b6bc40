#!/usr/bin/env bash
# Soak test of actord (a manual measurement, not run by CI): runs actord under
# load for DURATION seconds while scraping /metrics every second, and writes
# one CSV line per scrape: seconds since start, scrape latency (s), RSS, Go
# heap in use, goroutines, OS threads, live actors, queued messages, messages
# sent, stale workers. At the end it prints the first and last minutes'
# figures and actord's final log line.
#
#   bash dashboards/soak.sh                      # 300 s of the mixed load at 50,000 requests/s
#   DURATION=60 ARGS="-workload executor" bash dashboards/soak.sh
#
# Only 127.0.0.1 is contacted; everything ends by itself after DURATION.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-300}
ADDR=${ADDR:-127.0.0.1:9465}
ARGS=${ARGS:-"-rate 50000 -size 5000"}
OUT=${OUT:-$(mktemp -d /tmp/actord-soak.XXXXXX)}

mkdir -p "$OUT"
go build -o "$OUT/actord" ./cmd/actord
# shellcheck disable=SC2086 # ARGS is a list of flags
"$OUT/actord" -listen "$ADDR" -report-interval 30s $ARGS >"$OUT/actord.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -sf "http://$ADDR/healthz" >/dev/null && break; sleep 0.1; done

metric() { awk -v m="$1" '$1 == m { print $2; exit }' "$OUT/scrape.txt"; }
echo "t_s,scrape_s,rss_bytes,heap_bytes,goroutines,threads,live_actors,queued,messages_sent,stale_workers" >"$OUT/soak.csv"
start=$(date +%s%N)
end=$((start + DURATION * 1000000000))
while [ "$(date +%s%N)" -lt "$end" ]; do
  t0=$(date +%s%N)
  lat=$(curl -s -o "$OUT/scrape.txt" -w '%{time_total}' "http://$ADDR/metrics")
  t=$(awk -v a="$t0" -v b="$start" 'BEGIN { printf "%.3f", (a - b) / 1e9 }')
  echo "$t,$lat,$(metric process_resident_memory_bytes),$(metric go_memstats_heap_alloc_bytes),$(metric go_goroutines),$(metric go_threads),$(metric actord_live_actors),$(metric actord_queued_messages),$(metric actord_messages_sent_total),$(metric actord_stale_workers)" >>"$OUT/soak.csv"
  sleep "$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { d = 1 - (b - a) / 1e9; printf "%.3f", (d > 0 ? d : 0) }')"
done
kill -TERM $pid
wait $pid || echo "actord exited with status $?"
trap - EXIT

python3 - "$OUT/soak.csv" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def f(r, k): return float(r[k] or 0)
first = [r for r in rows if f(r, "t_s") < 60]
last = [r for r in rows if f(r, "t_s") >= f(rows[-1], "t_s") - 60]
lat = sorted(f(r, "scrape_s") for r in rows)
print(f"{len(rows)} scrapes; scrape latency p50 {lat[len(lat)//2]*1000:.1f} ms, p99 {lat[int(len(lat)*0.99)]*1000:.1f} ms, max {lat[-1]*1000:.1f} ms")
for name, part in (("first minute", first), ("last minute", last)):
    print(f"{name}: RSS max {max(f(r,'rss_bytes') for r in part)/2**20:.1f} MiB, "
          f"heap max {max(f(r,'heap_bytes') for r in part)/2**20:.1f} MiB, "
          f"goroutines {min(f(r,'goroutines') for r in part):.0f}-{max(f(r,'goroutines') for r in part):.0f}, "
          f"threads {max(f(r,'threads') for r in part):.0f}, "
          f"queued max {max(f(r,'queued') for r in part):.0f}, "
          f"stale scrapes {sum(1 for r in part if f(r,'stale_workers') > 0)}")
dt = f(rows[-1], "t_s") - f(rows[0], "t_s")
print(f"messages/s over the run: {(f(rows[-1],'messages_sent') - f(rows[0],'messages_sent')) / dt:.0f}")
EOF
tail -1 "$OUT/actord.log"
echo "data in $OUT"
