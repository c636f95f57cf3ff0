#!/bin/sh
# The release build of the server as shipped: the Dockerfile and the benchmarks build with it.
#
#   deploy/release-build.sh [swift build options]     e.g. --scratch-path .build-release
#   deploy/release-build.sh [the same options] --show-bin-path
#
# The Swift runtime and Foundation are linked in statically: the binary loads no Swift library at
# run time. Every Swift function, the packages' too, is compiled into a section of its own and the
# binary is linked by lld (the toolchain's; the default link is gold) in the order of
# `link-order.txt` beside this script: the functions a GET, a PUT and a save run (the runtime's
# among them), most instructions first, so they share about 290 pages of code instead of lying
# across 850. Functions the list names that the code no longer has are skipped.
# Benchmarks/layout/link_order.sh makes the list again; it sets LINK_ORDER to another list, or to
# nothing for no order.
set -eu
order="${LINK_ORDER-$(cd "$(dirname "$0")" && pwd)/link-order.txt}"
if [ -n "$order" ]; then
    set -- -Xlinker "--symbol-ordering-file=$order" -Xlinker --no-warn-symbol-ordering "$@"
fi
exec swift build -c release --product stockroom --static-swift-stdlib \
    -Xswiftc -Xfrontend -Xswiftc -function-sections -Xswiftc -use-ld=lld "$@"
