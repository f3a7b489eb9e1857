package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

const goPluginHandshake = "1|1|unix|/tmp/plugin123.sock|grpc|"

// runFilter feeds stdout through filterStdout and returns what reached
// go-plugin and the lines that were logged instead.
func runFilter(t *testing.T, stdout string) (passed string, logged []string) {
	t.Helper()
	var buf bytes.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Trace, JSONFormat: true})
	out, err := io.ReadAll(filterStdout(io.NopCloser(strings.NewReader(stdout)), logger))
	if err != nil {
		t.Fatalf("reading the filtered stdout: %v", err)
	}
	// The filter logs each line before closing the pipe, so every entry is
	// in buf once ReadAll has returned.
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 4*maxStdoutLine)
	for sc.Scan() {
		var entry struct {
			Message string `json:"@message"`
			Level   string `json:"@level"`
			Line    string `json:"line"`
		}
		if err := json.Unmarshal(sc.Bytes(), &entry); err != nil {
			t.Fatalf("log entry %q: %v", sc.Text(), err)
		}
		if entry.Message != "plugin stdout" || entry.Level != "info" {
			t.Fatalf("unexpected log entry %q", sc.Text())
		}
		logged = append(logged, entry.Line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return string(out), logged
}

func TestFilterStdout(t *testing.T) {
	tests := []struct {
		name       string
		stdout     string
		wantPassed string
		wantLogged []string
	}{
		{name: "handshake only", stdout: goPluginHandshake + "\n", wantPassed: goPluginHandshake + "\n"},
		{
			name:       "stray lines around the handshake",
			stdout:     "starting up\n{\"level\":\"info\"}\n" + goPluginHandshake + "\nserving\n",
			wantPassed: goPluginHandshake + "\n",
			wantLogged: []string{"starting up", `{"level":"info"}`, "serving"},
		},
		{name: "tcp handshake", stdout: "1|2|tcp|127.0.0.1:4567|grpc\n", wantPassed: "1|2|tcp|127.0.0.1:4567|grpc\n"},
		{name: "handshake without trailing newline", stdout: goPluginHandshake, wantPassed: goPluginHandshake + "\n"},
		{name: "CRLF handshake", stdout: goPluginHandshake + "\r\n", wantPassed: goPluginHandshake + "\n"},
		{
			name:       "look-alikes are logged",
			stdout:     "1|1|unix|/tmp/x.sock|netrpc\nv1|1|unix|/tmp/x.sock|grpc\n1|1|udp|/tmp/x.sock|grpc\n1|1|unix||grpc\nsee 1|1|unix|/tmp/x.sock|grpc\n",
			wantLogged: []string{"1|1|unix|/tmp/x.sock|netrpc", "v1|1|unix|/tmp/x.sock|grpc", "1|1|udp|/tmp/x.sock|grpc", "1|1|unix||grpc", "see 1|1|unix|/tmp/x.sock|grpc"},
		},
		{name: "empty lines are logged", stdout: "\n\n", wantLogged: []string{"", ""}},
		{name: "nothing", stdout: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			passed, logged := runFilter(t, tt.stdout)
			if passed != tt.wantPassed {
				t.Errorf("passed %q, want %q", passed, tt.wantPassed)
			}
			if !slices.Equal(logged, tt.wantLogged) {
				t.Errorf("logged %q, want %q", logged, tt.wantLogged)
			}
		})
	}
}

func TestFilterStdoutSurvivesVeryLongLines(t *testing.T) {
	long := strings.Repeat("x", 3*maxStdoutLine+17)
	medium := strings.Repeat("m", 200<<10)
	passed, logged := runFilter(t, medium+"\n"+long+"\n"+goPluginHandshake+"\nafter\n"+long)

	if passed != goPluginHandshake+"\n" {
		t.Errorf("passed %d bytes %.80q…, want the handshake", len(passed), passed)
	}
	if len(logged) != 4 {
		t.Fatalf("logged %d lines, want 4", len(logged))
	}
	if logged[0] != medium {
		t.Errorf("a %d-byte line was logged as %d bytes", len(medium), len(logged[0]))
	}
	for _, i := range []int{1, 3} {
		if logged[i] != long[:maxStdoutLine] {
			t.Errorf("line %d: logged %d bytes, want the first %d of the over-long line", i, len(logged[i]), maxStdoutLine)
		}
	}
	if logged[2] != "after" {
		t.Errorf("line after the over-long one logged as %.80q", logged[2])
	}
}

func TestFilterStdoutPassesReadErrors(t *testing.T) {
	boom := errors.New("boom")
	pr, pw := io.Pipe()
	out := filterStdout(pr, hclog.NewNullLogger())
	go func() {
		_, _ = pw.Write([]byte(goPluginHandshake + "\n"))
		_ = pw.CloseWithError(boom)
	}()
	got, err := io.ReadAll(out)
	if string(got) != goPluginHandshake+"\n" || !errors.Is(err, boom) {
		t.Errorf("ReadAll = %q, %v; want the handshake, then %v", got, err, boom)
	}
}
