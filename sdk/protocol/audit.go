package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"unicode/utf8"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

var auditActionRE = regexp.MustCompile(`^[a-z0-9_]+\.[a-z0-9_]+\.[a-z0-9_]+$`)

// AuditStatuses are the statuses the host's audit log accepts.
var AuditStatuses = [...]string{"success", "failure", "warning"}

// CheckAuditAction reports what is wrong with an audit entry's action, nil
// when the host's audit log accepts it: <category>.<name>.<outcome>. The
// audit log checks every entry with it, a plugin's and the host's own, and
// the test harness's Host service the entries a plugin appends.
func CheckAuditAction(action string) error {
	if !auditActionRE.MatchString(action) {
		return fmt.Errorf("%q is not <category>.<name>.<outcome> with each part made of a-z, 0-9 and _", action)
	}
	return nil
}

// CheckAuditStatus reports what is wrong with an audit entry's status, nil
// when it is one of AuditStatuses.
func CheckAuditStatus(status string) error {
	if !slices.Contains(AuditStatuses[:], status) {
		return fmt.Errorf("%q is not one of %s, %s, %s", status, AuditStatuses[0], AuditStatuses[1], AuditStatuses[2])
	}
	return nil
}

// CheckMarkFresh reports what is wrong with a freshness mark, nil when the
// host records it: a mark names its tenant and its domain, and a failure's
// reason is valid UTF-8 of at most MaxFailure bytes.
func CheckMarkFresh(req *pluginv1.MarkFreshRequest) error {
	if req.TenantId == "" || req.Domain == "" {
		return errors.New("tenant_id and domain are required")
	}
	if len(req.Failure) > MaxFailure || !utf8.ValidString(req.Failure) {
		return fmt.Errorf("failure must be valid UTF-8 of at most %d bytes", MaxFailure)
	}
	return nil
}

// MaxFailure bounds the reason of a failed sync a plugin reports.
const MaxFailure = 4000

// AuditDetails decodes an audit entry's details, which must be a JSON
// object when present; none is an empty object. The host's audit log and
// the test harness's Host service both decode them with it.
func AuditDetails(raw []byte) (map[string]any, error) {
	details := map[string]any{}
	if len(raw) == 0 {
		return details, nil
	}
	if err := json.Unmarshal(raw, &details); err != nil || details == nil {
		return nil, errors.New("details must be a JSON object")
	}
	return details, nil
}
