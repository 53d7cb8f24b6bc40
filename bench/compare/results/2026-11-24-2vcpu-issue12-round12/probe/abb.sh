#!/bin/bash
# usage: abb.sh probe rounds out label=bin[:ENV=v,..] ...
probe=$1; rounds=$2; out=$3; shift 3; : > $out
for r in $(seq $rounds); do
  if (( r % 2 )); then order="$*"; else order=$(echo "$@" | tr ' ' '\n' | tac | tr '\n' ' '); fi
  for spec in $order; do
    label=${spec%%=*}; rest=${spec#*=}; bin=${rest%%:*}; envv=""; [[ "$rest" == *:* ]] && envv=${rest#*:}; envv=${envv//,/ }
    env $envv CHURNPROBE=$probe /tmp/exp/$bin.test -test.run ZZChurnProbe -test.cpu 2 -test.count 1 -test.v 2>&1 | grep ms | sed "s/^/$label r=$r /" >> $out
  done
done
