package pluginv1

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
)

var update = flag.Bool("update", false, "add the protocol's new fields, values and methods to testdata/released.txt")

// TestReleasedProtocolUnchanged keeps the promise of the proto files'
// header: every field, enum value and method once released keeps its
// number, name, type and shape. testdata/released.txt lists them; a change
// may only add to it (go test -update appends the new ones).
func TestReleasedProtocolUnchanged(t *testing.T) {
	path := filepath.Join("testdata", "released.txt")
	current := protocolLines(File_steward_plugin_v1_plugin_proto, File_steward_plugin_v1_host_proto)
	b, err := os.ReadFile(path)
	if err != nil && !(*update && os.IsNotExist(err)) {
		t.Fatal(err)
	}
	released := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(b) == 0 {
		released = nil
	}
	for _, line := range released {
		if !slices.Contains(current, line) {
			t.Errorf("released %q is gone or changed: add fields instead, and mark unused ones deprecated", line)
		}
	}
	var added []string
	for _, line := range current {
		if !slices.Contains(released, line) {
			added = append(added, line)
		}
	}
	if len(added) == 0 {
		return
	}
	if !*update {
		t.Errorf("not yet in %s (go test -update adds them):\n%s", path, strings.Join(added, "\n"))
		return
	}
	if err := os.WriteFile(path, []byte(strings.Join(append(released, added...), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// protocolLines describes each field, enum value and method on a line.
func protocolLines(files ...protoreflect.FileDescriptor) []string {
	var out []string
	enums := func(es protoreflect.EnumDescriptors) {
		for i := 0; i < es.Len(); i++ {
			e := es.Get(i)
			for j := 0; j < e.Values().Len(); j++ {
				v := e.Values().Get(j)
				out = append(out, fmt.Sprintf("enum %s %d %s", e.FullName(), v.Number(), v.Name()))
			}
		}
	}
	var messages func(protoreflect.MessageDescriptors)
	messages = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			m := ms.Get(i)
			for j := 0; j < m.Fields().Len(); j++ {
				f := m.Fields().Get(j)
				typ := f.Kind().String()
				switch {
				case f.IsMap():
					typ = fmt.Sprintf("map<%s, %s>", kindName(f.MapKey()), kindName(f.MapValue()))
				case f.Message() != nil || f.Enum() != nil:
					typ = kindName(f)
				}
				oneof := ""
				if o := f.ContainingOneof(); o != nil {
					oneof = " oneof " + string(o.Name())
				}
				out = append(out, fmt.Sprintf("message %s %d %s %s %s%s", m.FullName(), f.Number(), f.Name(), f.Cardinality(), typ, oneof))
			}
			enums(m.Enums())
			messages(m.Messages())
		}
	}
	for _, fd := range files {
		enums(fd.Enums())
		messages(fd.Messages())
		for i := 0; i < fd.Services().Len(); i++ {
			s := fd.Services().Get(i)
			for j := 0; j < s.Methods().Len(); j++ {
				m := s.Methods().Get(j)
				out = append(out, fmt.Sprintf("rpc %s.%s(%s%s) returns (%s%s)", s.FullName(), m.Name(),
					stream(m.IsStreamingClient()), m.Input().FullName(), stream(m.IsStreamingServer()), m.Output().FullName()))
			}
		}
	}
	return out
}

func kindName(f protoreflect.FieldDescriptor) string {
	switch {
	case f.Message() != nil:
		return string(f.Message().FullName())
	case f.Enum() != nil:
		return string(f.Enum().FullName())
	}
	return f.Kind().String()
}

func stream(on bool) string {
	if on {
		return "stream "
	}
	return ""
}
