# METADATA
# title: Framework mapping
# description: |
#   Maps Azure policy definitions to the controls of the regulatory
#   frameworks in data.frameworks (the JSON files in frameworks/, whose
#   README states the rules implemented here).
#
#   Input: {"policies": [{"id": ..., "name": ..., "group_names": [...]}]},
#   one entry per distinct policy definition.
#
#   Output: matches[framework id][control id][policy id] is
#     {"tier": 1, "confidence": "high", "group_name": ...}  or
#     {"tier": 2, "confidence": "medium" | "low", "keywords": [...]}
#   naming what made the policy map to the control.
package steward.compliance.mapping

# The key under which control ids and group names are compared: upper case,
# every run of characters other than letters and digits turned into one dot,
# none at either end. PR.AA-01, PR.AA_01 and PR_AA_01 all become PR.AA.01.
normalize(s) := concat(".", [t | some t in regex.split(`[^\pL\pN]+`, upper(s)); t != ""])

# The lower-case words of a policy name: every run of letters and digits.
name_words(name) := [t | some t in regex.split(`[^\pL\pN]+`, lower(name)); t != ""]

# Every beginning of every word of a name, two characters or longer. A
# keyword word matches a name when it begins one of the name's words, that
# is when it is one of these ("vault" begins "vaults").
word_beginnings(name) := {substring(w, 0, n) |
	some w in name_words(name)
	count(w) >= 2
	some n in numbers.range(2, count(w))
}

# ---------------------------------------------------------------------------
# Tier 1: group names, confidence high.
# ---------------------------------------------------------------------------

# control_ids[framework][normalised control id] is the control's id.
#
# This and the other indexes below are complete rules (no variable in the
# head): OPA evaluates one once per query and then reads it by key. Looking
# up a partial rule by key would evaluate its body again for every key.
control_ids := {fw_id: {normalize(control.id): control.id | some control in fw.controls} |
	some fw_id, fw in data.frameworks
}

# tier1_groups[framework][control][policy] holds the policy's group names
# that name the control: one of the framework's group-name prefixes followed
# by the control's id, compared after normalize. A group naming a category,
# or nothing the framework defines, maps to no control.
tier1_groups[fw_id][control_id][policy.id] contains group if {
	some policy in input.policies
	some group in policy.group_names
	key := normalize(group)
	some fw_id, prefixes in group_prefixes
	some prefix in prefixes
	startswith(key, prefix)
	control_id := control_ids[fw_id][substring(key, count(prefix), -1)]
}

# group_prefixes[framework] holds its group-name prefixes, normalised and
# followed by the dot that separates them from a control id.
group_prefixes := {fw_id: {concat("", [normalize(form.prefix), "."]) | some form in fw.group_names} |
	some fw_id, fw in data.frameworks
}

# tier1_policies[framework] holds the policies that map to some control of
# the framework by a group name; tier 2 does not apply to them there.
tier1_policies := {fw_id: {policy_id | some by_policy in controls; some policy_id, _ in by_policy} |
	some fw_id, controls in tier1_groups
}

# ---------------------------------------------------------------------------
# Tier 2: keyword sets, confidence medium (two or more words) or low (one).
# ---------------------------------------------------------------------------

# keyword_index[framework][word] holds each keyword set whose first word it
# is, with its control, so that a policy is checked only against the sets
# whose first word begins one of its words, not against every set. The
# partial rule below groups the sets; this complete rule takes its whole
# value once, so that reading it by key costs a lookup.
keyword_index := keyword_sets_by_first_word

# first_words[framework] holds the words that begin its keyword sets.
first_words := {fw_id: {word | some word, _ in index} | some fw_id, index in keyword_index}

keyword_sets_by_first_word[fw_id][keywords[0]] contains {"control": control.id, "keywords": keywords} if {
	some fw_id, fw in data.frameworks
	some control in fw.controls
	some keywords in control.keywords
}

# tier2_sets[framework][control][policy] holds the keyword sets of the
# control that the policy's name matches: every word of the set begins some
# word of the name, in any order, ignoring case and punctuation. Only for a
# policy with no group name mapping it to a control of that framework.
tier2_sets[fw_id][entry.control][policy.id] contains entry.keywords if {
	some policy in input.policies
	beginnings := word_beginnings(policy.name)
	some fw_id, index in keyword_index
	not tier1_policies[fw_id][policy.id]
	some first in (beginnings & first_words[fw_id])
	some entry in index[first]
	every word in entry.keywords {
		word in beginnings
	}
}

# The confidence of a tier-2 match: medium when a set of two or more words
# matched, low when only single words did.
keyword_confidence(size) := "medium" if size >= 2

keyword_confidence(size) := "low" if size < 2

# ---------------------------------------------------------------------------
# The mapping.
# ---------------------------------------------------------------------------

# matches[framework][control][policy] explains one mapping. When several
# group names name the same control the first in sort order is given; when
# several keyword sets match, the longest (then the first in sort order),
# which is the one that sets the confidence. object.union merges nested
# objects key by key; a policy appears under a framework through one tier
# only, so nothing of one tier is overwritten by the other.
matches := object.union(tier1_matches, tier2_matches)

tier1_matches := {fw_id: {control_id: tier1_explanations(by_policy) | some control_id, by_policy in controls} |
	some fw_id, controls in tier1_groups
}

tier2_matches := {fw_id: {control_id: tier2_explanations(by_policy) | some control_id, by_policy in controls} |
	some fw_id, controls in tier2_sets
}

# tier1_explanations(by_policy) is, per policy, the first of the group names
# that map it to the control.
tier1_explanations(by_policy) := {policy_id: {"tier": 1, "confidence": "high", "group_name": min(groups)} |
	some policy_id, groups in by_policy
}

# tier2_explanations(by_policy) is, per policy, the keyword set that sets
# the confidence of its match with the control.
tier2_explanations(by_policy) := {policy_id: keyword_explanation(sets) | some policy_id, sets in by_policy}

keyword_explanation(sets) := {"tier": 2, "confidence": keyword_confidence(longest), "keywords": chosen} if {
	longest := max({count(s) | some s in sets})
	chosen := min({s | some s in sets; count(s) == longest})
}
