package testplugin

import (
	"encoding/json"
	"net/http"
	"os"
	"sort"
	"strings"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/sdk"
)

// envBody is what the plugin was given of the host's environment and
// cloud credential: names only, so that the answer carries no secret.
type envBody struct {
	Names []string `json:"names"`
	// CloudCredential says whether the cloud settings Configure handed
	// over carry a credential.
	CloudCredential bool `json:"cloud_credential"`
}

// hasCloudCredential reports whether cloud settings carry a credential.
func hasCloudCredential(settings json.RawMessage) bool {
	var cc cloud.Config
	if json.Unmarshal(settings, &cc) != nil {
		return false
	}
	return cc.ClientSecret != "" || cc.CertificatePath != "" || cc.CertificatePassword != "" || cc.TokenFilePath != ""
}

func (p *plugin) env(w http.ResponseWriter, _ *http.Request) {
	names := []string{}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	sort.Strings(names)
	sdk.WriteJSON(w, http.StatusOK, envBody{Names: names, CloudCredential: p.cloudCredential})
}
