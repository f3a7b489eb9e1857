package plugins

import (
	"encoding/json"
	"strings"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/sdk/protocol"
)

// inheritedEnv are the variables of the host's environment a plugin
// inherits: what a process needs to find programs, files, time zones,
// locales, certificates and proxies, the Go runtime's own knobs, and the
// directory an SDK plugin writes its profiles to when asked. The
// host's settings (STEWARD_*) hold its secrets — the JWT keys, the identity
// provider's and the cloud's client secrets, passwords in the database and
// Redis URLs — and reach a plugin only as far as Configure hands them on.
var inheritedEnv = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true, "TMPDIR": true, "TZ": true,
	"LANG": true, "LANGUAGE": true, "SSL_CERT_FILE": true, "SSL_CERT_DIR": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true, "http_proxy": true, "https_proxy": true, "no_proxy": true,
	"GOMAXPROCS": true, "GODEBUG": true, "GOTRACEBACK": true, "GOGC": true,
	protocol.EnvProfileDir: true,
}

// cloudCredentialEnv are the prefixes of the variables through which the
// Azure SDK finds an ambient credential (a workload identity's token file,
// a managed identity's endpoint); a plugin granted the cloud credential
// inherits them.
var cloudCredentialEnv = []string{"AZURE_", "IDENTITY_", "MSI_", "IMDS_"}

// pluginEnv is the environment a plugin starts with, drawn from the
// host's: the allow-listed variables, locale categories (LC_*), and the
// ambient cloud credential's variables when cloudCredential is granted.
// go-plugin adds its own handshake variables to it.
func pluginEnv(hostEnv []string, cloudCredential bool) []string {
	out := make([]string, 0, len(inheritedEnv))
	for _, kv := range hostEnv {
		name, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if inheritedEnv[name] || strings.HasPrefix(name, "LC_") || (cloudCredential && hasAnyPrefix(name, cloudCredentialEnv)) {
			out = append(out, kv)
		}
	}
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// pluginCloud is the cloud settings a plugin is configured with: the
// host's, without the credential (client secret, certificate, federated
// token file) unless the plugin is granted it.
func pluginCloud(settings json.RawMessage, cloudCredential bool) (json.RawMessage, error) {
	if cloudCredential || len(settings) == 0 {
		return settings, nil
	}
	var cc cloud.Config
	if err := json.Unmarshal(settings, &cc); err != nil {
		return nil, err
	}
	cc.ClientSecret, cc.CertificatePath, cc.CertificatePassword, cc.TokenFilePath = "", "", "", ""
	return json.Marshal(cc)
}
