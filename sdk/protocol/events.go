package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// Bounds of an event a plugin raises and of the event types it declares.
// The host's notifications store keeps to the same ones.
const (
	MaxEventKind        = 100
	MaxEventDescription = 500
	MaxEventTitle       = 200
	MaxEventMessage     = 4000
	MaxEventLink        = 2000
	MaxEventDedupeKey   = 200
	MaxEventRecipients  = 50
	MaxEventDetails     = 16 << 10
)

// HostEventArea is the area of the event kinds the host raises itself
// (sync.failed); no plugin declares a kind in it.
const HostEventArea = "sync"

// EventSeverities are the severities an event may have, mildest first.
var EventSeverities = []string{"info", "warning", "error", "critical"}

var eventKindRE = regexp.MustCompile(`^[a-z0-9_]+\.[a-z0-9_]+$`)

// CheckEventKind reports what is wrong with an event kind, nil when it is
// <area>.<name> of a-z, 0-9 and _, at most MaxEventKind bytes.
func CheckEventKind(kind string) error {
	if len(kind) > MaxEventKind || !eventKindRE.MatchString(kind) {
		return fmt.Errorf("%q is not <area>.<name> of a-z, 0-9 and _ (at most %d bytes)", kind, MaxEventKind)
	}
	return nil
}

// CheckEventTypes reports what is wrong with the event types one plugin
// declares, nil when the host accepts them: each a kind CheckEventKind
// accepts outside the host's area, declared once, with a description of 1
// to MaxEventDescription characters. The SDK checks a plugin's with it,
// the host and the test harness every description.
func CheckEventTypes(types []*pluginv1.EventType) error {
	seen := map[string]bool{}
	for _, t := range types {
		if err := CheckEventKind(t.Name); err != nil {
			return fmt.Errorf("event type: %w", err)
		}
		if strings.HasPrefix(t.Name, HostEventArea+".") {
			return fmt.Errorf("event type %s: the %s. area is the host's", t.Name, HostEventArea)
		}
		if seen[t.Name] {
			return fmt.Errorf("event type %s is declared twice", t.Name)
		}
		seen[t.Name] = true
		if t.Description == "" || utf8.RuneCountInString(t.Description) > MaxEventDescription || ControlChars(t.Description, false) {
			return fmt.Errorf("event type %s: the description must have 1 to %d characters and %s", t.Name, MaxEventDescription, MsgControlChars)
		}
	}
	return nil
}

// EventError is what is wrong with an event a plugin raises; Field names
// the RaiseEventRequest's field.
type EventError struct {
	Field  string
	Reason string
}

func (e *EventError) Error() string { return fmt.Sprintf("event: invalid %s: %s", e.Field, e.Reason) }

// CheckRaiseEvent reports what is wrong with an event a plugin raises, nil
// when the host keeps it: a kind among the declared types, a known
// severity, a title of 1 to MaxEventTitle characters, a message, a link
// that is a path in Steward, a dedupe key, bare e-mail recipients and
// details that are a JSON object, each within its bound. The host's Host
// service and the test harness's both check with it.
func CheckRaiseEvent(req *pluginv1.RaiseEventRequest, declared []*pluginv1.EventType) error {
	bad := func(field, format string, args ...any) error {
		return &EventError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if !slices.ContainsFunc(declared, func(t *pluginv1.EventType) bool { return t.Name == req.Kind }) {
		return bad("kind", "%q is not an event type the plugin declares", req.Kind)
	}
	switch {
	case !slices.Contains(EventSeverities, req.Severity):
		return bad("severity", "%q is none of %s", req.Severity, strings.Join(EventSeverities, ", "))
	case req.Title == "" || utf8.RuneCountInString(req.Title) > MaxEventTitle || ControlChars(req.Title, false):
		return bad("title", "must have 1 to %d characters and %s", MaxEventTitle, MsgControlChars)
	case len(req.Message) > MaxEventMessage || ControlChars(req.Message, true):
		return bad("message", "must have at most %d bytes and %s", MaxEventMessage, MsgControlChars)
	case req.Link != "" && (len(req.Link) > MaxEventLink || !strings.HasPrefix(req.Link, "/") || strings.HasPrefix(req.Link, "//") || ControlChars(req.Link, false)):
		return bad("link", "must be a path in Steward starting with a single / (at most %d bytes)", MaxEventLink)
	case req.DedupeKey == "" || len(req.DedupeKey) > MaxEventDedupeKey || !utf8.ValidString(req.DedupeKey):
		return bad("dedupe_key", "must be UTF-8 of 1 to %d bytes", MaxEventDedupeKey)
	case len(req.Recipients) > MaxEventRecipients:
		return bad("recipients", "at most %d", MaxEventRecipients)
	case len(req.Details) > MaxEventDetails:
		return bad("details", "at most %d bytes", MaxEventDetails)
	}
	for i, r := range req.Recipients {
		if a, err := mail.ParseAddress(r); err != nil || a.Address != r {
			return bad(fmt.Sprintf("recipients[%d]", i), "%q is not a bare e-mail address", r)
		}
	}
	if _, err := EventDetails(req.Details); err != nil {
		return bad("details", "%v", err)
	}
	return nil
}

// EventDetails decodes an event's details, which must be a JSON object
// when present; none is an empty object.
func EventDetails(raw []byte) (map[string]any, error) {
	details := map[string]any{}
	if len(raw) == 0 {
		return details, nil
	}
	if err := json.Unmarshal(raw, &details); err != nil || details == nil {
		return nil, errors.New("must be a JSON object")
	}
	return details, nil
}
