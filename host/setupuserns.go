package host

// Setup installs the profile granting the bwrap binary bin (an absolute path) user
// namespaces: bin's symlinks resolved under Root (Resolve), then the profile written
// and loaded (Install).
func (u Userns) Setup(bin string) (Step, error) {
	resolved, err := u.Resolve(bin)
	if err != nil {
		return Step{}, err
	}
	return u.Install(resolved)
}
