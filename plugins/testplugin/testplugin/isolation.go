package testplugin

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"sync"

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
	// HostCapabilities are those the host named in Configure.
	HostCapabilities []string `json:"host_capabilities"`
}

// hasCloudCredential reports whether cloud settings carry a credential.
func hasCloudCredential(settings json.RawMessage) bool {
	var cc cloud.Config
	if json.Unmarshal(settings, &cc) != nil {
		return false
	}
	return cc.ClientSecret != "" || cc.CertificatePath != "" || cc.CertificatePassword != "" || cc.TokenFilePath != ""
}

func (p *plugin) env(context.Context, *sdk.Empty) (*envBody, error) {
	names := []string{}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	sort.Strings(names)
	return &envBody{Names: names, CloudCredential: p.cloudCredential, HostCapabilities: p.hostCapabilities}, nil
}

// held is memory the allocate route keeps reachable, so that the process's
// resident set stays up whatever the garbage collector does.
var held struct {
	mu     sync.Mutex
	blocks [][]byte
}

// heldBody says how much memory the plugin holds.
type heldBody struct {
	HeldMiB int `json:"held_mib"`
}

type allocateIn struct {
	MiB int `query:"mib" minimum:"1" maximum:"4096" default:"64"`
}

// allocate allocates and holds mib MiB more, touching every page so that
// it is resident, to prove the host's memory limit.
func allocate(_ context.Context, in *allocateIn) (*heldBody, error) {
	block := make([]byte, in.MiB<<20)
	for i := 0; i < len(block); i += 4096 {
		block[i] = 1
	}
	held.mu.Lock()
	held.blocks = append(held.blocks, block)
	total := 0
	for _, b := range held.blocks {
		total += len(b) >> 20
	}
	held.mu.Unlock()
	return &heldBody{HeldMiB: total}, nil
}
