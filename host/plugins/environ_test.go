package plugins

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stewardhq/steward/core/cloud"
)

func TestPluginEnvHoldsNoHostSecret(t *testing.T) {
	host := []string{
		"PATH=/usr/bin", "HOME=/home/steward", "TMPDIR=/tmp/x", "TZ=UTC", "LANG=C.UTF-8", "LC_ALL=C",
		"HTTPS_PROXY=http://proxy:3128", "no_proxy=localhost", "STEWARD_PLUGIN_PROFILE_DIR=/tmp/profiles",
		"STEWARD_JWT_SECRET=jwt-secret", "STEWARD_JWT_PREVIOUS_SECRETS=old-secret",
		"STEWARD_OIDC_CLIENT_SECRET=oidc-secret", "STEWARD_AZURE_CLIENT_SECRET=azure-secret",
		"STEWARD_AZURE_CERTIFICATE_PASSWORD=cert-password", "STEWARD_DATABASE_URL=postgres://u:db-password@db/steward",
		"STEWARD_REDIS_URL=redis://:redis-password@redis:6379/0", "AWS_SECRET_ACCESS_KEY=aws",
		"AZURE_FEDERATED_TOKEN_FILE=/var/run/token", "AZURE_CLIENT_ID=app", "IDENTITY_ENDPOINT=http://169.254.169.254",
		"malformed",
	}
	base := []string{"PATH=/usr/bin", "HOME=/home/steward", "TMPDIR=/tmp/x", "TZ=UTC", "LANG=C.UTF-8", "LC_ALL=C",
		"HTTPS_PROXY=http://proxy:3128", "no_proxy=localhost", "STEWARD_PLUGIN_PROFILE_DIR=/tmp/profiles"}
	if got := pluginEnv(host, false); !reflect.DeepEqual(got, base) {
		t.Errorf("without the cloud credential:\n got %q\nwant %q", got, base)
	}
	granted := append(append([]string(nil), base...), "AZURE_FEDERATED_TOKEN_FILE=/var/run/token", "AZURE_CLIENT_ID=app", "IDENTITY_ENDPOINT=http://169.254.169.254")
	if got := pluginEnv(host, true); !reflect.DeepEqual(got, granted) {
		t.Errorf("with the cloud credential:\n got %q\nwant %q", got, granted)
	}
}

func TestPluginCloudWithholdsTheCredential(t *testing.T) {
	full := cloud.Config{Provider: cloud.ProviderAzure, TenantID: "tid", ClientID: "app", ClientSecret: "azure-secret",
		CertificatePath: "/etc/steward/cert.pfx", CertificatePassword: "cert-password", TokenFilePath: "/var/run/token",
		Credential: cloud.CredentialClientSecret, Endpoints: cloud.Endpoints{ResourceManager: "https://arm.example"}}
	raw, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pluginCloud(raw, true)
	if err != nil || string(got) != string(raw) {
		t.Errorf("granted: %s, %v; want the host's settings", got, err)
	}
	got, err = pluginCloud(raw, false)
	if err != nil {
		t.Fatal(err)
	}
	var cc cloud.Config
	if err := json.Unmarshal(got, &cc); err != nil {
		t.Fatal(err)
	}
	want := full
	want.ClientSecret, want.CertificatePath, want.CertificatePassword, want.TokenFilePath = "", "", "", ""
	if !reflect.DeepEqual(cc, want) {
		t.Errorf("not granted:\n got %+v\nwant %+v", cc, want)
	}
	if got, err := pluginCloud(nil, false); err != nil || got != nil {
		t.Errorf("no cloud settings: %s, %v", got, err)
	}
	if _, err := pluginCloud(json.RawMessage(`[`), false); err == nil {
		t.Error("unreadable cloud settings accepted")
	}
}
