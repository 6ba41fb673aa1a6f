package host

// ParseGrantLimits parses box grant's NAME=VALUE limits (ParseGrantLimit each; a later
// one of a name replaces an earlier), refusing at the first bad one.
func ParseGrantLimits(ss []string) (map[string]string, error) {
	limits := map[string]string{}
	for _, s := range ss {
		k, v, err := ParseGrantLimit(s)
		if err != nil {
			return nil, err
		}
		limits[k] = v
	}
	return limits, nil
}
