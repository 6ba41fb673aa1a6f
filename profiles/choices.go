package profiles

// Choices are the profiles under configHome as name and description pairs, in List's
// order: what completion offers. A broken user profile is List's error.
func Choices(configHome string) ([][2]string, error) {
	ps, err := List(Dir(configHome))
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for _, p := range ps {
		out = append(out, [2]string{p.Name, p.Description})
	}
	return out, nil
}
