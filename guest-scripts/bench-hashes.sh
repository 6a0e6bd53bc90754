#!/bin/sh
# bench-hashes.sh LLAMA_BENCH MODEL: hashes llama-bench (a name is looked up in
# /opt/homebrew/bin and /usr/local/bin, Homebrew's, then the guest's PATH: a non-login SSH
# shell on macOS has /usr/bin:/bin:/usr/sbin:/sbin) and the model; prints the three lines
# bench_parse_hashes reads (ops/bench_vm.c): its path, its SHA-256, the model's. Exit 3: no
# llama-bench; 4: no model.
PATH=/opt/homebrew/bin:/usr/local/bin:$PATH
lb=$(command -v -- "$1") || { echo "llama-bench not found in the guest: $1 (looked in /opt/homebrew/bin:/usr/local/bin and PATH)" >&2; exit 3; }
if [ ! -f "$2" ] || [ ! -r "$2" ]; then echo "model not found in the guest: $2" >&2; exit 4; fi
printf '%s\n' "$lb"; shasum -a 256 "$lb" | cut -c1-64; shasum -a 256 "$2" | cut -c1-64
