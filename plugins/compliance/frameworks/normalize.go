package frameworks

import (
	"strings"
	"unicode"
)

// Normalize returns the key under which control ids and group names are
// compared: upper case, every run of characters other than letters and
// digits turned into one dot, none at either end. So PR.AA-01, PR.AA_01 and
// PR_AA_01 share the key PR.AA.01, and NIST_CSF_v2.0_PR.AA_01 becomes
// NIST.CSF.V2.0.PR.AA.01. In Rego:
//
//	concat(".", [t | some t in regex.split(`[^\pL\pN]+`, upper(s)); t != ""])
func Normalize(s string) string {
	return strings.Join(fields(strings.ToUpper(s)), ".")
}

// Words splits text into the lower-case words that keyword sets are matched
// against: every run of letters and digits is a word. A keyword set matches
// a policy name when each of its words begins some word of the name, so
// "vault" matches "vaults" and "encrypt" matches "encryption". In Rego:
//
//	[t | some t in regex.split(`[^\pL\pN]+`, lower(s)); t != ""]
func Words(s string) []string {
	return fields(strings.ToLower(s))
}

// fields splits s at every character outside the Unicode letter and number
// categories, as regex.split(`[^\pL\pN]+`, s) does in Rego.
func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	})
}

// minWordLen keeps keyword words long enough to mean something as a prefix.
const minWordLen = 2

// genericWords occur in so many policy names that a keyword set made only of
// them would match nearly every policy.
var genericWords = map[string]bool{
	"a": true, "accounts": true, "all": true, "an": true, "and": true,
	"are": true, "as": true, "at": true, "audit": true, "azure": true,
	"be": true, "by": true, "category": true, "configure": true,
	"configured": true, "control": true, "data": true, "default": true,
	"deploy": true, "deprecated": true, "disabled": true, "enable": true,
	"enabled": true, "ensure": true, "for": true, "from": true, "group": true,
	"have": true, "in": true, "information": true, "is": true,
	"machines": true, "managed": true, "microsoft": true, "not": true,
	"of": true, "on": true, "or": true, "policy": true, "preview": true,
	"resource": true, "resources": true, "security": true, "service": true,
	"services": true, "set": true, "setting": true, "settings": true,
	"should": true, "system": true, "that": true, "the": true, "to": true,
	"use": true, "used": true, "using": true, "virtual": true, "with": true,
}
