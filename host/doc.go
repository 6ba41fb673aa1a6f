// Package host builds the host side of the vm backend's isolation stack.
//
// This part is the host firewall, written with github.com/google/nftables (never by
// running nft). Plan turns facts (bridge, gateway, kernel features) into a Ruleset, plain
// data that renders as nft text; Apply sends it in one batch; Verify reads it back;
// Remove deletes it. Box owns two tables, bridge box and inet box, and touches no other:
// every rule drops box traffic only, and a drop in any table is final, so box coexists
// with Incus's own tables, Docker and UFW without ordering tricks.
//
// # Box to box without bridge meta
//
// Frames between two boxes are switched by the bridge and never reach an L3 hook (unless
// br_netfilter hands them over; then inet box/forward drops IPv4 ones too). The bridge
// family's forward hook sees exactly those frames, every ethertype (ARP, IPv6
// link-local, LLMNR). The precise match is the bridge itself, meta ibrname/obrname,
// which needs CONFIG_NFT_BRIDGE_META; DetectBridgeMeta probes for it in a throwaway
// network namespace (some kernels lack it: the lab's does).
//
// Without it, the rule matches the ports by name: iifname and oifname both among
// PortPatterns, by default veth* and tap*, the names Incus gives the host side of a
// bridged NIC (veth<random> for containers, tap<random> for VMs) unless host_name is
// set. The limits of that fallback:
//
//   - It cannot tell bridges apart: frames between two veth*/tap* ports of any other
//     bridge are dropped too (Docker's docker0 names its ports veth*, so do other Incus
//     or LXD bridges). It fails closed; doctor should warn when another bridge has ports
//     matching the patterns.
//   - A NIC whose host_name falls outside the patterns escapes it. host_name is set by
//     whoever configures Incus, never from inside a box, and box's placement profile
//     sets none; security.port_isolation on the NIC is the other layer.
//
// Overreach lists the other bridges' ports the patterns catch, for doctor to warn about.
//
// Matching the bridge's port list at apply time was rejected: ports come and go with
// every box start, so a list frozen at apply time fails open for every box started
// after it, including those Incus starts on its own at boot.
//
// # Box to host
//
// inet box/input drops everything from the bridge but DHCP (to the gateway or the
// limited broadcast) and DNS to the gateway from the bridge's subnet: a box cannot make
// the host's resolver send replies to an address outside the subnet (e.g. on the LAN)
// by forging the source. Forging a sibling's address inside the subnet is the placement
// profile's to stop: its NIC's security.ipv4_filtering (Incus's per-NIC bridge filter)
// lets ARP and IPv4 out only from the box's own address, so a box can neither send as a
// sibling nor claim the sibling's address to the host's ARP code (the host would then
// send it the sibling's traffic). inet box/output and forward drop everything new headed into the bridge, except
// the DHCP server's replies, which conntrack sees as new.
//
// Every match is by name (iifname, not iif), so the rules load before the bridge or any
// box exists (the boot unit may run before incusd) and keep holding across re-creation.
//
// # How setup-host uses it
//
// setup-host, after creating (or finding) the bridge through the Incus API, calls
// ApplyFirewall(nftables.New(), bridge, ipv4Address) with the bridge name and its
// ipv4.address, and prints the returned Ruleset; the boot unit runs box to do the same;
// doctor plans the same Ruleset and reports Verify's drift; teardown-host calls Remove.
//
// # The restricted tier
//
// box grant, box revoke, doctor's grant lines and the drill's grant rows act on a
// GrantHost: the local incusd as its administrator, with facts the CLI read (the incus
// directory, the placement profile) and its wording of incusd's errors passed in. The
// policy is plain data (grant.go); the sequences, what is done in what order against
// incusd, incus-user and the group database, are grantconverge.go, revoke.go,
// grantdoctor.go and grantdrill.go. The hints they give that name a box verb moved with
// them verbatim.
package host
