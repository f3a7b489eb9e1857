package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// hostSecrets are settings of the host that no plugin may read.
var hostSecrets = map[string]string{
	"STEWARD_JWT_SECRET":                 "e2e-jwt-secret-of-at-least-32-bytes-long",
	"STEWARD_JWT_PREVIOUS_SECRETS":       "e2e-previous-jwt-secret-of-32-bytes-or-more",
	"STEWARD_OIDC_CLIENT_SECRET":         "e2e-oidc-client-secret",
	"STEWARD_AZURE_CLIENT_SECRET":        "e2e-azure-client-secret",
	"STEWARD_AZURE_CERTIFICATE_PASSWORD": "e2e-certificate-password",
}

// goPluginEnv is what go-plugin itself hands a plugin for its handshake.
var goPluginEnv = map[string]bool{"STEWARD_PLUGIN": true, "PLUGIN_MIN_PORT": true, "PLUGIN_MAX_PORT": true,
	"PLUGIN_PROTOCOL_VERSIONS": true, "PLUGIN_UNIX_SOCKET_DIR": true}

// TestPluginEnvironmentHoldsNoHostSecret: with the host's secrets set, the
// plugin's environment holds none of them nor any other of the host's
// settings, only the allow-listed variables, and the cloud credential
// reaches it only when plugins.hcl grants it.
func TestPluginEnvironmentHoldsNoHostSecret(t *testing.T) {
	for _, granted := range []bool{false, true} {
		t.Run(fmt.Sprintf("cloud_credential=%t", granted), func(t *testing.T) {
			hcl := fmt.Sprintf("plugin \"testplugin\" {\n  binary = %q\n  cloud_credential = %t\n}\n", filepath.Join(binDir, "plugins", "testplugin"), granted)
			env := map[string]string{"PATH": "/usr/bin:/bin", "TZ": "UTC"}
			for k, v := range hostSecrets {
				env[k] = v
			}
			h := startHost(t, hostOpts{pluginsHCL: hcl, env: env})
			var got struct {
				Names           []string `json:"names"`
				CloudCredential bool     `json:"cloud_credential"`
			}
			r := h.get("/api/v1/testplugin/env", h.login())
			if r.status != 200 {
				t.Fatalf("env: %d %s", r.status, r.body)
			}
			r.json(t, &got)
			have := map[string]bool{}
			for _, name := range got.Names {
				have[name] = true
				if strings.HasPrefix(name, "STEWARD_") && !goPluginEnv[name] {
					t.Errorf("the plugin's environment holds the host's %s", name)
				}
				if !goPluginEnv[name] && !inherited(name, granted) {
					t.Errorf("the plugin's environment holds %s, which is not allow-listed", name)
				}
			}
			if !have["PATH"] || !have["TZ"] || !have["STEWARD_PLUGIN"] {
				t.Errorf("the plugin's environment lacks PATH, TZ or the handshake cookie: %v", got.Names)
			}
			if got.CloudCredential != granted {
				t.Errorf("the plugin holds the cloud credential: %t, want %t", got.CloudCredential, granted)
			}
		})
	}
}

// inherited reports whether a plugin may inherit the host's variable name;
// one granted the cloud credential also inherits the Azure SDK's ambient
// credential variables.
func inherited(name string, cloudCredential bool) bool {
	switch name {
	case "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "LANGUAGE", "SSL_CERT_FILE", "SSL_CERT_DIR",
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
		"GOMAXPROCS", "GODEBUG", "GOTRACEBACK", "GOGC":
		return true
	}
	for _, p := range []string{"AZURE_", "IDENTITY_", "MSI_", "IMDS_"} {
		if cloudCredential && strings.HasPrefix(name, p) {
			return true
		}
	}
	return strings.HasPrefix(name, "LC_")
}
