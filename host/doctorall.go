package host

import (
	"context"
	"os"
	"os/user"
	"strconv"
)

// AllChecks are box doctor's checks as the host's administrator: the stack's (Doctor, of
// c's remote when it has one), the exposures, and on this machine the grants.
func (h GrantHost) AllChecks(ctx context.Context, o DoctorOptions) []Check {
	c := h.Client
	o.Remote = c.RemoteName()
	checks := append(Doctor(ctx, c, o), ExposureCheck(ctx, c))
	if o.Remote == "" {
		checks = append(checks, h.GrantChecks(ctx)...)
	}
	return checks
}

// UserChecks are box doctor's checks for a granted user on incus-user's socket sock:
// their side of the grant (UserDoctor).
func UserChecks(ctx context.Context, sock, placement string) []Check {
	c := LocalClient(sock)
	defer c.Close()
	return UserDoctor(ctx, c, placement, currentUser())
}

// currentUser is the name of the user running box (their uid when it has none).
func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}
