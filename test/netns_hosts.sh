# netns_hosts.sh - sourced by the tests that run ranks on emulated hosts
# (tcp_netns.sh, hosts_netns.sh): a bridge in its own network namespace and
# hosts on it, each a namespace with one veth link. Each function answers 0,
# or nonzero when a step failed (the caller says so and cleans up).

# netns_bridge TAG: namespace TAGsw holding bridge br0
netns_bridge() {
    ip -n "$1sw" link set lo up &&
    ip -n "$1sw" link add br0 type bridge &&
    ip -n "$1sw" link set br0 up
}

# netns_host TAG H NET: namespace TAGhH, its eth0 at NET.(H+1)/24 on the
# bridge through port pH
netns_host() {
    ip netns add "$1h$2" &&
    ip -n "$1sw" link add "p$2" type veth peer name eth0 netns "$1h$2" &&
    ip -n "$1sw" link set "p$2" master br0 up &&
    ip -n "$1h$2" link set lo up &&
    ip -n "$1h$2" addr add "$3.$(($2 + 1))/24" dev eth0 &&
    ip -n "$1h$2" link set eth0 up
}
