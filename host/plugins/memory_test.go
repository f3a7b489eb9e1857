package plugins

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestParseVmRSS(t *testing.T) {
	status := "Name:\ttestplugin\nVmPeak:\t 1262440 kB\nVmSize:\t 1262440 kB\nVmRSS:\t   26268 kB\nRssAnon:\t   12000 kB\n"
	if got, err := parseVmRSS(strings.NewReader(status)); err != nil || got != 26268<<10 {
		t.Errorf("parseVmRSS = %d, %v; want %d", got, err, 26268<<10)
	}
	for name, bad := range map[string]string{
		"no VmRSS line (a kernel thread)": "Name:\tkthreadd\nState:\tS (sleeping)\n",
		"another unit":                    "VmRSS:\t 26268 MB\n",
		"not a number":                    "VmRSS:\t many kB\n",
	} {
		if got, err := parseVmRSS(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: %d, want an error", name, got)
		}
	}
}

func TestResidentBytes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	rss, err := residentBytes(os.Getpid())
	if err != nil || rss < 1<<20 {
		t.Errorf("this process's resident memory: %d, %v", rss, err)
	}
	if _, err := residentBytes(1 << 30); !os.IsNotExist(err) {
		t.Errorf("a process that does not exist: %v, want not-exist", err)
	}
}
