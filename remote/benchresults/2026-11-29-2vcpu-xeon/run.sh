#!/bin/bash
# run.sh BENCH BENCHTIME NAME: 7 rounds of the benchmarks matching BENCH,
# each round running $BIN/old.test then $BIN/new.test (test binaries of the
# remote package built with go test -c from two commits), appending their
# output to $BIN/old-NAME.txt and $BIN/new-NAME.txt. Run in remote/.
BIN=${BIN:-/tmp}
for i in 1 2 3 4 5 6 7; do
  for v in old new; do
    "$BIN/$v.test" -test.run XXX -test.bench "$1" -test.benchtime "${2:-1s}" >> "$BIN/$v-$3.txt" 2>/dev/null
  done
done
