#!/usr/bin/env bash
# deps.sh: install the optional system libraries picasso loads at run time,
# when run as root on Debian (apt-get); otherwise say how. picasso builds and
# runs without either.
#   - OpenBLAS (libopenblas0-pthread): the CPU backend's GEMM; without it a
#     pure-Go GEMM stands in.
#   - NVRTC (libnvrtc11.2 and libnvrtc-builtins11.8, Debian non-free): the
#     CUDA kernel compiler. It needs no GPU; with it, `make test` compiles
#     every kernel for sm_80 and sm_90 and checks the committed PTX/CUBINs.
set -u
arch=$(uname -m)-linux-gnu
have() { [ -e "/usr/lib/$arch/$1" ]; }
root=0; [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && root=1
updated=0
install() { # PACKAGES...
  apt-get install -y -q "$@" >/dev/null 2>&1 && return 0
  if [ $updated = 0 ]; then
    updated=1
    apt-get update -q >/dev/null 2>&1
    apt-get install -y -q "$@" >/dev/null 2>&1 && return 0
  fi
  return 1
}

if have libopenblas.so.0; then
  echo "deps: OpenBLAS present"
elif [ $root = 1 ]; then
  echo "deps: installing libopenblas0-pthread"
  install libopenblas0-pthread || echo "deps: could not install libopenblas0-pthread; picasso will use its pure-Go GEMM"
else
  echo "deps: OpenBLAS missing; for faster training run: sudo apt-get install libopenblas0-pthread"
fi

nonfree=/etc/apt/sources.list.d/picasso-nonfree.sources
if have libnvrtc.so.11.2 || have libnvrtc.so.12 || have libnvrtc.so.13; then
  echo "deps: NVRTC present"
elif [ $root = 1 ] && [ -f /etc/os-release ] && grep -q 'VERSION_CODENAME=bookworm' /etc/os-release; then
  if ! grep -rqs 'non-free' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    # Debian's own mirror and keyring, with the contrib and non-free components.
    cat >"$nonfree" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    updated=0
  fi
  echo "deps: installing libnvrtc11.2 (Debian non-free) to compile the CUDA kernels"
  install libnvrtc11.2 libnvrtc-builtins11.8 || echo "deps: could not install NVRTC; the kernel compile check will be skipped"
else
  echo "deps: NVRTC missing; to compile the CUDA kernels enable Debian's non-free component and run: sudo apt-get install libnvrtc11.2 libnvrtc-builtins11.8"
fi
exit 0
