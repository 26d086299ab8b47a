# SPDX-License-Identifier: GPL-2.0
# Downloads that survive a bad minute: sourced by every script of the
# set-up that fetches something (apt-get, debootstrap, cargo). The package
# registries' names fail to resolve now and then for a minute; one failed
# download must not fail a whole test command.
#
#   retry WHAT CMD [ARGS...]
#
# runs CMD up to RXE_RS_TRIES times (default 4), pausing RXE_RS_RETRY_PAUSE
# seconds (default 15, doubled after each failure: 15, 30, 60), and when
# the last try fails too, says what failed and how to rerun and returns
# CMD's exit code. CMD may be a shell function; it must be safe to run
# again after a failure. RXE_RS_RERUN is the command to rerun: the first
# script that sourced this file sets it to its own command line and
# exports it, so a script it starts names the command the user typed
# (the Makefile sets it to the make command).
# shellcheck shell=bash

if [ -z "${RXE_RS_RERUN:-}" ]; then
	RXE_RS_RERUN="$0${*:+ $*}"
	export RXE_RS_RERUN
fi

retry() {
	local what=$1 tries=${RXE_RS_TRIES:-4} pause=${RXE_RS_RETRY_PAUSE:-15} try rc
	shift
	for ((try = 1; ; try++)); do
		"$@" && return 0
		rc=$?
		if ((try >= tries)); then
			{
				echo "${0##*/}: FAILED: $what (tried $try times; last exit code $rc): $*"
				echo "${0##*/}: a download failed: check that Debian's archive and crates.io"
				echo "${0##*/}: answer from this machine (DNS, proxy), then rerun: $RXE_RS_RERUN"
				echo "${0##*/}: (what was already downloaded and built is kept)"
			} >&2
			return "$rc"
		fi
		echo "${0##*/}: $what failed (exit code $rc, try $try of $tries); trying again in ${pause}s" >&2
		sleep "$pause"
		pause=$((pause * 2))
	done
}
