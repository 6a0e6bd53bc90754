#!/bin/sh
# reconcile.sh: prints install.json, the result the current release's install kept
# (ops/deploy.c reconciles a deploy the ledger does not know of from it).
cd "$HOME/Library/Application Support/lume-metal" && cat install.json
