#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The sluice authors
#
# Shared by sluice-demo and sluice-test: install what sluice needs on Debian 12, reserve
# hugepages when possible, build. Sourced, not run.

SLUICE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SLUICE_DEPS=(build-essential pkg-config meson ninja-build libdpdk-dev dpdk liburcu-dev
	libhugetlbfs-dev libhugetlbfs-bin libnuma-dev libpcap-dev clang libclang-rt-14-dev
	iproute2 iputils-ping python3 kmod libsodium-dev libcurl4-openssl-dev libjansson-dev
	etcd-server etcd-client curl libevent-dev nodejs npm prometheus
	libnats-dev libhiredis-dev nats-server redis-server gnuplot-nox ethtool)

# sl_have_pmd NAME: the DPDK installed here ships the PMD NAME (net_af_xdp, net_memif, ...)
sl_have_pmd() { ls /usr/lib/*/dpdk/pmds-*/librte_"$1".so* > /dev/null 2>&1; }
sl_say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
sl_die() { printf 'error: %s\n' "$*" >&2; exit 1; }

sl_need_root() {
	[ "$(id -u)" = 0 ] || sl_die "run as root (sudo $0): sluice needs hugepages, \
network namespaces and DPDK devices"
}

# Install the Debian packages that are missing (nothing to do when all are present).
sl_install_deps() {
	local missing=() p
	for p in "${SLUICE_DEPS[@]}" "$@"; do
		# Node.js from another source (e.g. NodeSource's nodejs, which carries its own
		# npm and conflicts with Debian's npm package): its commands are enough
		case $p in
		nodejs | npm) command -v "${p/nodejs/node}" > /dev/null && continue ;;
		esac
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	sl_say "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq || sl_die "apt-get update failed"
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
		sl_die "apt-get install ${missing[*]} failed"
}

# Reserve 2 MiB hugepages and mount hugetlbfs when we can. Sets SLUICE_EAL_MEM to the EAL
# memory options to use: hugepages (files unlinked at once, so nothing is left behind even
# after a SIGKILL) or --no-huge when none can be had.
sl_hugepages() {
	local want=${SLUICE_HUGEPAGES:-512} have
	have=$(awk '/HugePages_Total/ {print $2}' /proc/meminfo)
	if [ "${have:-0}" -lt "$want" ]; then
		echo "$want" > /proc/sys/vm/nr_hugepages 2>/dev/null || true
		have=$(awk '/HugePages_Total/ {print $2}' /proc/meminfo)
	fi
	if [ "${have:-0}" -gt 0 ] && ! grep -qs ' hugetlbfs ' /proc/mounts; then
		mkdir -p /dev/hugepages
		mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null || true
	fi
	local free
	free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
	if [ "${free:-0}" -ge 256 ] && grep -qs ' hugetlbfs ' /proc/mounts; then
		SLUICE_EAL_MEM="--huge-unlink"
		sl_say "hugepages: ${free} free 2 MiB pages"
	else
		SLUICE_EAL_MEM="--no-huge -m 512"
		sl_say "no hugepages available: running with --no-huge (slower)"
	fi
	export SLUICE_EAL_MEM
}

# EAL options common to every sluice process started by our scripts: no PCI scan (the
# machine's own NIC is not ours), lcores laid out for this machine's CPUs.
sl_eal_common() {
	local ncpu
	ncpu=$(nproc)
	if [ "$ncpu" -ge 3 ]; then
		SLUICE_LCORES="0@0,1@1,2@2"
	elif [ "$ncpu" -ge 2 ]; then
		SLUICE_LCORES="0@0,1@1,2@0"
	else
		SLUICE_LCORES="0@0,1@0,2@0"
	fi
	export SLUICE_LCORES
	export SLUICE_EAL="--no-pci --lcores $SLUICE_LCORES $SLUICE_EAL_MEM --log-level=lib.eal:warning"
}

# Configure and build into $1 with extra meson options.
sl_build() {
	local dir=$1
	shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$SLUICE_ROOT" "$@" >/dev/null || sl_die "meson setup $dir failed"
	fi
	ninja -C "$dir" >/dev/null || { ninja -C "$dir"; sl_die "build in $dir failed"; }
}
