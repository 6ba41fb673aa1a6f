package incuslab

import (
	"context"
	"fmt"
)

// CloudInitAlias is the alias of the lab image that runs cloud-init (ImportCloudInit).
const CloudInitAlias = "box-test/bookworm-cloud"

// CloudInitRecipe is the plain lab image plus cloud-init, seeded the way Incus seeds a
// container (LAB.md): image templates write the NoCloud seed from the instance's
// cloud-init.user-data on create and copy. cloud-init is installed in the chroot
// (debootstrap fails with it); it renders no network (networkd owns eth0) and sets no
// locale (en_US is not built, which would end in status: error).
func CloudInitRecipe() Recipe {
	r := BookwormRecipe()
	// python3 is installed with it, not by debootstrap, so this image starts from the
	// same debootstrap tree as the others (base.go).
	r.Install = []string{"python3", "cloud-init"}
	files := map[string]string{
		"/etc/cloud/cloud.cfg.d/90-box-lab.cfg": "datasource_list: [ NoCloud, None ]\nnetwork:\n  config: disabled\nlocale: false\n",
	}
	for k, v := range r.Files {
		files[k] = v
	}
	r.Files = files
	seed := "/var/lib/cloud/seed/nocloud-net/"
	r.Templates = map[string]string{
		seed + "meta-data":   "instance-id: {{ instance.name }}\nlocal-hostname: {{ instance.name }}\n",
		seed + "user-data":   `{{ config_get("cloud-init.user-data", properties.default) }}` + "\n",
		seed + "vendor-data": `{{ config_get("cloud-init.vendor-data", properties.default) }}` + "\n",
	}
	return r
}

// ImportCloudInit builds (or finds in the cache) the cloud-init image and imports it
// into the lab as CloudInitAlias. Only the tests that need cloud-init pay for it, once
// per machine.
func (l *Lab) ImportCloudInit(ctx context.Context) (fingerprint string, err error) {
	img, err := EnsureImage(ctx, CloudInitRecipe(), nil)
	if err != nil {
		return "", err
	}
	fp, err := l.Client.ImportImage(ctx, img.Metadata, img.Rootfs, CloudInitAlias)
	if err != nil {
		return "", fmt.Errorf("import the cloud-init image: %w", err)
	}
	return fp, nil
}
