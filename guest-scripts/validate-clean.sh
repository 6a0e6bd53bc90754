#!/bin/sh
# validate-clean.sh DIR: removes validate's scratch directory DIR, and nothing else.
case $1 in /*/lume-metal-validate.*) rm -rf "$1" ;; esac
