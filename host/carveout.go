package host

// The contract's exceptions to "box to host dropped": a box may ask the gateway for
// DHCP and DNS, and nothing else. The firewall (ruleset.go) accepts exactly these, and
// the drill judges a reachable gateway port in this list as the carve-out, not a breach.
const (
	DNSPort        = 53 // UDP and TCP, to the gateway
	DHCPServerPort = 67 // UDP, to the gateway (or broadcast)
	DHCPClientPort = 68
)

// GatewayCarveOut reports whether a box reaching the gateway on TCP port is one of the
// contract's exceptions (DNS over TCP). DHCP is UDP only.
func GatewayCarveOut(tcpPort int) bool { return tcpPort == DNSPort }
