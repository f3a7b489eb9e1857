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
#     {"tier": 2, "confidence": "medium" | "low", "keywords": [...]}  or
#     {"tier": 2, "confidence": "medium", "override": reason}
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

# Each entry carries what decides whether a match of its set counts: the
# control's negative keyword sets and the names its overrides exclude.
keyword_sets_by_first_word[fw_id][keywords[0]] contains entry if {
	some fw_id, fw in data.frameworks
	some control in fw.controls
	some keywords in control.keywords
	entry := {
		"control": control.id,
		"keywords": keywords,
		"negative": object.get(control, "negative_keywords", []),
		"excluded": {name_key(o.policy) | some o in object.get(control, "overrides", []); o.match == false},
	}
}

# stop_words[framework] holds the words skipped when checking that a
# keyword set is a phrase of the name ("of", "for", "the").
stop_words := {fw_id: {w | some w in object.get(fw, ["keyword_matching", "stop_words"], [])} |
	some fw_id, fw in data.frameworks
}

# min_scores[framework] is the score a keyword set must reach to count;
# 1, every matching set, when the framework sets none.
min_scores := {fw_id: object.get(fw, ["keyword_matching", "min_score"], 1) | some fw_id, fw in data.frameworks}

# The key an override names a policy by: its lower-case words, so that case
# and punctuation do not matter.
name_key(name) := concat(" ", name_words(name))

# The words of a name that a phrase is read from: its words without the
# framework's stop words.
content_words(name, stops) := [w | some w in name_words(name); not w in stops]

# A keyword set is a phrase of the name when its words begin consecutive
# content words of the name, in the set's order.
is_phrase(keywords, words) if {
	count(words) >= count(keywords)
	some i in numbers.range(0, count(words) - count(keywords))
	every j, word in keywords {
		startswith(words[i + j], word)
	}
}

# The score of a matching keyword set: one per word, and one more when the
# set is a phrase of the name.
keyword_score(keywords, words) := count(keywords) + 1 if is_phrase(keywords, words)

keyword_score(keywords, words) := count(keywords) if not is_phrase(keywords, words)

# A set of words matches a name when every word begins some word of it.
set_matches(keywords, beginnings) if {
	every word in keywords {
		word in beginnings
	}
}

# tier2_sets[framework][control][policy] holds the keyword sets of the
# control that the policy's name matches: every word of the set begins some
# word of the name, in any order, ignoring case and punctuation, and the
# set scores at least the framework's minimum. None counts when one of the
# control's negative keyword sets matches the name too, or an override
# excludes the policy. Only for a policy with no group name mapping it to a
# control of that framework.
tier2_sets[fw_id][entry.control][policy.id] contains entry.keywords if {
	some policy in input.policies
	beginnings := word_beginnings(policy.name)
	some fw_id, index in keyword_index
	not tier1_policies[fw_id][policy.id]
	some first in (beginnings & first_words[fw_id])
	some entry in index[first]
	set_matches(entry.keywords, beginnings)
	scores_enough(entry.keywords, policy.name, fw_id)
	not negated(entry.negative, beginnings)
	not name_key(policy.name) in entry.excluded
}

# A single-word set names one distinctive term and needs no score; a set of
# two or more words must reach the framework's minimum.
scores_enough(keywords, _, _) if count(keywords) == 1

scores_enough(keywords, name, fw_id) if {
	count(keywords) > 1
	keyword_score(keywords, content_words(name, stop_words[fw_id])) >= min_scores[fw_id]
}

negated(negative, beginnings) if {
	some keywords in negative
	set_matches(keywords, beginnings)
}

# override_matches[framework][control][policy] explains a match that an
# override adds: the control's override names the policy (compared by
# name_key) with match true. Only for a policy with no group name mapping it
# to a control of that framework; it replaces any keyword match there.
override_matches[fw_id][o.control][policy.id] := {"tier": 2, "confidence": "medium", "override": o.reason} if {
	some policy in input.policies
	some fw_id, by_name in override_index
	not tier1_policies[fw_id][policy.id]
	some o in by_name[name_key(policy.name)]
}

# override_index[framework][name key] holds the controls that overrides add
# the named policy to, with the reasons; a complete rule, read by key.
override_index := included_by_name

included_by_name[fw_id][name_key(o.policy)] contains {"control": control.id, "reason": o.reason} if {
	some fw_id, fw in data.frameworks
	some control in fw.controls
	some o in object.get(control, "overrides", [])
	o.match == true
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
# only, so nothing of one tier is overwritten by the other, except that an
# override adding a policy to a control replaces its keyword explanation.
matches := object.union(object.union(tier1_matches, tier2_matches), override_matches)

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
