package host

// GrantError is a grant or revoke that stopped on what it found: Why says which case, the
// other fields are the facts the CLI's hint names (the CLI words it, naming its verbs).
type GrantError struct {
	Why     GrantWhy
	User    string // the grantee
	Project string // the grantee's project
	Owner   string // GrantUIDReused: the user the project was granted to
	Pool    string // RevokeBuckets: the storage pool holding them
	UsedBy  string // GrantBridgeUsed: what uses the bridge
	Err     error
}

func (e *GrantError) Error() string { return e.Err.Error() }
func (e *GrantError) Unwrap() error { return e.Err }

// GrantWhy is the case a GrantError stopped on.
type GrantWhy int

const (
	GrantPortNameProbe     GrantWhy = iota // the firewall's kernel support could not be checked
	GrantNoPlacement                       // the placement profile is missing
	GrantPlacementNoNIC                    // the placement profile has no NIC on a network
	GrantNotAdmin                          // incusd refused box as its administrator
	GrantUIDReused                         // the project is another (deleted) user's grant
	GrantForeignProject                    // incus-user made the project and it holds instances
	GrantNetworkExists                     // a network holds incus-user's bridge name
	GrantBridgeUsed                        // incus-user's bridge is used by something else
	GrantRefused                           // incusd refused the project's restrictions
	RevokeNoGrant                          // the user has no grant
	RevokeNotGranted                       // the project is not the user's grant
	RevokeForeignInstances                 // the project holds instances box did not mint
	RevokeBuckets                          // the project holds storage buckets
)
