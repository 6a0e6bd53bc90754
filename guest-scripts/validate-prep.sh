#!/bin/sh
# validate-prep.sh DIR LLAMA_PERPLEXITY MODEL: in DIR (payload.tar.gz and text.txt
# uploaded there), unpacks what the shimmed arm needs, and prints llama-perplexity's path (a name
# is looked up as bench-hashes.sh does), the model's and the text's SHA-256 (ops/validate.c).
# Exit 3: no llama-perplexity; 4: no model.
cd "$1" || exit 1
tar -xzf payload.tar.gz bin/run-with-shim lib shim.env || { echo 'cannot unpack the payload' >&2; exit 1; }
PATH=/opt/homebrew/bin:/usr/local/bin:$PATH
lp=$(command -v -- "$2") || { echo "llama-perplexity not found in the guest: $2 (looked in /opt/homebrew/bin:/usr/local/bin and PATH)" >&2; exit 3; }
if [ ! -f "$3" ] || [ ! -r "$3" ]; then echo "model not found in the guest: $3" >&2; exit 4; fi
printf '%s\n' "$lp"; shasum -a 256 "$3" | cut -c1-64; shasum -a 256 text.txt | cut -c1-64
