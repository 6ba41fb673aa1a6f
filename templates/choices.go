package templates

// Choices are the templates under configHome as name and description pairs, in List's
// order: what completion offers. A broken user template is List's error.
func Choices(configHome string) ([][2]string, error) {
	ts, err := List(Dir(configHome))
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for _, t := range ts {
		out = append(out, [2]string{t.Name, t.Description})
	}
	return out, nil
}
