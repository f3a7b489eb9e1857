// Package posture checks a domain's e-mail security posture: its DMARC
// policy, SPF record, DKIM keys and MX records.
package posture

import (
	"context"
	"time"

	"github.com/stewardhq/steward/core/cloud"
)

// Resolver is what the checks ask; *cloud.Resolver implements it.
type Resolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
	LookupMX(ctx context.Context, name string) ([]string, error)
	LookupA(ctx context.Context, name string) ([]string, error)
	DMARC(ctx context.Context, domain string) (string, error)
	SPF(ctx context.Context, domain string) (string, error)
	DKIM(ctx context.Context, selector, domain string) (cloud.DKIMRecord, error)
}

var _ Resolver = (*cloud.Resolver)(nil)

// Severities of a problem, most severe first.
const (
	SeverityCritical = "critical"
	SeverityHigh     = "high"
	SeverityMedium   = "medium"
	SeverityLow      = "low"
	SeverityInfo     = "info"
)

// Problem is one thing wrong with, or worth knowing about, a record.
type Problem struct {
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

// DMARCRecord is a parsed DMARC record (RFC 7489, 6.3).
type DMARCRecord struct {
	Raw             string   `json:"raw"`
	Policy          string   `json:"policy"`
	SubdomainPolicy string   `json:"subdomain_policy"`
	Percent         int      `json:"percent"`
	RUA             []string `json:"rua"`
	RUF             []string `json:"ruf"`
	ADKIM           string   `json:"adkim"`
	ASPF            string   `json:"aspf"`
	FailureOptions  string   `json:"failure_options"`
	ReportFormat    string   `json:"report_format"`
	ReportInterval  int      `json:"report_interval"`
}

// ParseDMARC parses a DMARC record.
func ParseDMARC(record string) (DMARCRecord, []Problem) {
	return DMARCRecord{Raw: record, Percent: 100, ADKIM: "r", ASPF: "r", FailureOptions: "0", ReportFormat: "afrf", ReportInterval: 86400}, nil
}

// SPFTerm is one mechanism or modifier of an SPF record.
type SPFTerm struct {
	Qualifier string `json:"qualifier"`
	Mechanism string `json:"mechanism"`
	Value     string `json:"value"`
}

// SPFRecord is a parsed SPF record (RFC 7208, 4.6).
type SPFRecord struct {
	Raw      string    `json:"raw"`
	Terms    []SPFTerm `json:"terms"`
	All      string    `json:"all"`
	Redirect string    `json:"redirect"`
	Exp      string    `json:"exp"`
}

// ParseSPF parses an SPF record.
func ParseSPF(record string) (SPFRecord, []Problem) {
	return SPFRecord{Raw: record}, nil
}

// SPFEvaluation is what following an SPF record's includes and redirects
// found.
type SPFEvaluation struct {
	Lookups     int       `json:"lookups"`
	VoidLookups int       `json:"void_lookups"`
	Includes    []string  `json:"includes"`
	Loop        bool      `json:"loop"`
	OverLimit   bool      `json:"over_limit"`
	Problems    []Problem `json:"problems"`
}

// EvaluateSPF follows domain's SPF record through its includes and
// redirects, counting DNS lookups (RFC 7208, 4.6.4).
func EvaluateSPF(ctx context.Context, r Resolver, domain string) (SPFEvaluation, error) {
	return SPFEvaluation{}, nil
}

// DKIMKey is a parsed DKIM key record (RFC 6376, 3.6.1).
type DKIMKey struct {
	Selector string    `json:"selector"`
	Present  bool      `json:"present"`
	KeyType  string    `json:"key_type"`
	Bits     int       `json:"bits"`
	Revoked  bool      `json:"revoked"`
	Problems []Problem `json:"problems"`
}

// ParseDKIMKey parses a DKIM key record.
func ParseDKIMKey(record string) (DKIMKey, []Problem) {
	return DKIMKey{Present: record != "", KeyType: "rsa"}, nil
}

// DMARCResult is the DMARC part of a check.
type DMARCResult struct {
	Present  bool         `json:"present"`
	Record   *DMARCRecord `json:"record"`
	Problems []Problem    `json:"problems"`
	Error    string       `json:"error"`
}

// SPFResult is the SPF part of a check.
type SPFResult struct {
	Present    bool          `json:"present"`
	Record     *SPFRecord    `json:"record"`
	Evaluation SPFEvaluation `json:"evaluation"`
	Problems   []Problem     `json:"problems"`
	Error      string        `json:"error"`
}

// DKIMResult is one selector's part of a check.
type DKIMResult struct {
	Selector string   `json:"selector"`
	Key      *DKIMKey `json:"key"`
	CNAME    string   `json:"cname"`
	Error    string   `json:"error"`
}

// MXResult is the MX part of a check.
type MXResult struct {
	Present bool     `json:"present"`
	Hosts   []string `json:"hosts"`
	Error   string   `json:"error"`
}

// Result is one check of a domain's posture.
type Result struct {
	Domain    string       `json:"domain"`
	CheckedAt time.Time    `json:"checked_at"`
	DMARC     DMARCResult  `json:"dmarc"`
	SPF       SPFResult    `json:"spf"`
	DKIM      []DKIMResult `json:"dkim"`
	MX        MXResult     `json:"mx"`
	Score     int          `json:"score"`
	Grade     string       `json:"grade"`
	Findings  []Problem    `json:"findings"`
}

// DefaultSelectors are the DKIM selectors checked when none are given:
// Microsoft 365's.
var DefaultSelectors = []string{"selector1", "selector2"}

// Check checks domain's posture.
func Check(ctx context.Context, r Resolver, domain string, selectors []string) Result {
	return Result{Domain: domain, CheckedAt: time.Now().UTC(), Grade: "F"}
}

// Change is posture that weakened between two checks.
type Change struct {
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

// Weakened lists how posture weakened from prev to cur.
func Weakened(prev, cur Result) []Change {
	return nil
}
