package steward.compliance.mapping_test

import data.steward.compliance.mapping

# Two small frameworks, so that each case reads on its own. The tests at the
# end run against the shipped definitions instead.
frameworks := {
	"alpha": {
		"id": "alpha",
		"group_names": [{"prefix": "ALPHA_"}],
		"controls": [
			{"id": "A.1", "category": "A", "keywords": [["multi", "factor"], ["mfa"]]},
			{"id": "A.2", "category": "A", "keywords": [["encrypt", "transit"]]},
			{"id": "A.3", "category": "A", "keywords": [["backup"]]},
		],
	},
	"nist": {
		"id": "nist",
		"group_names": [{"prefix": "NIST_CSF_v2.0_"}],
		"controls": [
			{"id": "PR.AA-01", "category": "PR.AA", "keywords": [["identity"]]},
			{"id": "PR.DS-02", "category": "PR.DS", "keywords": [["encrypt", "transit"], ["tls"]]},
		],
	},
}

# A framework tuned as the shipped ones are: stop words, a minimum score,
# negative keywords and overrides.
tuned := {"tuned": {
	"id": "tuned",
	"group_names": [{"prefix": "TUNED_"}],
	"keyword_matching": {"stop_words": ["in", "of", "the", "with"], "min_score": 3},
	"controls": [
		{"id": "T.1", "category": "T", "keywords": [["virtual", "network"], ["firewall"]]},
		{
			"id": "T.2", "category": "T", "keywords": [["write", "permissions"]],
			"negative_keywords": [["mfa"]],
		},
		{
			"id": "T.3", "category": "T", "keywords": [["guest", "accounts"]],
			"overrides": [
				{"policy": "Guest accounts with owner permissions should be removed", "match": false, "reason": "Not a review."},
				{"policy": "Review external users quarterly", "match": true, "reason": "A review of guests."},
			],
		},
	],
}}

policy(name, groups) := {"id": "p1", "name": name, "group_names": groups}

# Where p1 maps in the tuned framework.
tuned_controls(name) := {control_id: by_policy.p1 |
	some control_id, by_policy in mapping.matches.tuned with input as {"policies": [policy(name, [])]}
		with data.frameworks as tuned
}

# The mapping of the single policy p1.
matches_of(p) := result if {
	result := mapping.matches with input as {"policies": [p]}
		with data.frameworks as frameworks
}

# Where p1 maps in a framework: {control id: explanation}.
controls_of(p, fw_id) := {control_id: m |
	some control_id, by_policy in matches_of(p)[fw_id]
	m := by_policy.p1
}

# --- Tier 1 ------------------------------------------------------------------

test_tier1_group_name_maps_with_high_confidence if {
	controls_of(policy("Allowed locations", ["ALPHA_A.1"]), "alpha") == {"A.1": {"tier": 1, "confidence": "high", "group_name": "ALPHA_A.1"}}
}

test_tier1_nist_dotted_form if {
	controls_of(policy("Allowed locations", ["NIST_CSF_v2.0_PR.AA_01"]), "nist") == {"PR.AA-01": {"tier": 1, "confidence": "high", "group_name": "NIST_CSF_v2.0_PR.AA_01"}}
}

test_tier1_nist_underscore_form if {
	controls_of(policy("Allowed locations", ["NIST_CSF_v2.0_PR_AA_01"]), "nist") == {"PR.AA-01": {"tier": 1, "confidence": "high", "group_name": "NIST_CSF_v2.0_PR_AA_01"}}
}

test_tier1_both_forms_give_one_match_naming_the_first if {
	controls_of(policy("x", ["NIST_CSF_v2.0_PR_AA_01", "NIST_CSF_v2.0_PR.AA_01"]), "nist") == {"PR.AA-01": {"tier": 1, "confidence": "high", "group_name": "NIST_CSF_v2.0_PR.AA_01"}}
}

test_tier1_ignores_case if {
	controls_of(policy("x", ["nist_csf_v2.0_pr.aa_01"]), "nist")["PR.AA-01"].tier == 1
}

test_tier1_several_controls if {
	got := controls_of(policy("x", ["ALPHA_A.1", "ALPHA_A.3"]), "alpha")
	object.keys(got) == {"A.1", "A.3"}
}

test_group_naming_a_category_maps_to_no_control if {
	controls_of(policy("Allowed locations", ["NIST_CSF_v2.0_PR.AA"]), "nist") == {}
}

test_group_naming_no_control_maps_to_nothing if {
	controls_of(policy("Allowed locations", ["ALPHA_Z.9", "ALPHA_", "A.1"]), "alpha") == {}
}

test_prefix_must_be_whole if {
	# ALPHAA_A.1 is not ALPHA_ followed by A.1.
	controls_of(policy("Allowed locations", ["ALPHAA_A.1", "XALPHA_A.1"]), "alpha") == {}
}

# --- Tier 2 ------------------------------------------------------------------

test_tier2_set_of_two_words_is_medium if {
	controls_of(policy("Accounts with owner permissions should have multi-factor authentication", []), "alpha") == {"A.1": {"tier": 2, "confidence": "medium", "keywords": ["multi", "factor"]}}
}

test_tier2_single_word_is_low if {
	controls_of(policy("MFA should be enabled for owners", []), "alpha") == {"A.1": {"tier": 2, "confidence": "low", "keywords": ["mfa"]}}
}

test_tier2_control_takes_the_highest_confidence if {
	controls_of(policy("MFA: require multi factor sign-in", []), "alpha") == {"A.1": {"tier": 2, "confidence": "medium", "keywords": ["multi", "factor"]}}
}

test_tier2_ignores_case_and_punctuation if {
	controls_of(policy("ENCRYPTION-in-TRANSIT (preview)", []), "alpha") == {"A.2": {"tier": 2, "confidence": "medium", "keywords": ["encrypt", "transit"]}}
}

test_tier2_words_in_any_order if {
	controls_of(policy("Transit traffic must use encryption", []), "alpha")["A.2"].confidence == "medium"
}

test_tier2_partial_set_does_not_match if {
	controls_of(policy("Storage accounts should use encryption at rest", []), "alpha") == {}
}

test_tier2_word_must_begin_a_word_of_the_name if {
	# "backup" occurs inside "nobackups" but begins no word of the name.
	controls_of(policy("Vaults with nobackups", []), "alpha") == {}
	controls_of(policy("Vaults with backups", []), "alpha")["A.3"].tier == 2
}

test_tier2_maps_to_every_matching_control if {
	got := controls_of(policy("Backup vaults need MFA", []), "alpha")
	got == {
		"A.1": {"tier": 2, "confidence": "low", "keywords": ["mfa"]},
		"A.3": {"tier": 2, "confidence": "low", "keywords": ["backup"]},
	}
}

test_tier2_applies_when_group_names_a_category_only if {
	# The group matches the prefix but names no control, so keywords decide.
	controls_of(policy("Use TLS 1.2", ["NIST_CSF_v2.0_PR.DS"]), "nist") == {"PR.DS-02": {"tier": 2, "confidence": "low", "keywords": ["tls"]}}
}

# --- Tier 2 tuning: score, negative keywords, overrides -------------------------

test_scattered_words_fall_short_of_the_minimum_score if {
	# "virtual" and "network" both occur, apart: score 2, below 3.
	not tuned_controls("Management ports of virtual machines should be protected with just-in-time network access control")["T.1"]
}

test_phrase_reaches_the_minimum_score if {
	tuned_controls("Azure Machine Learning Computes should be in a virtual network")["T.1"] == {"tier": 2, "confidence": "medium", "keywords": ["virtual", "network"]}
}

test_stop_words_do_not_break_a_phrase if {
	tuned_controls("Deploy virtual (the) networks")["T.1"].keywords == ["virtual", "network"]
}

test_single_word_set_needs_no_score if {
	tuned_controls("Azure Firewall should be enabled")["T.1"] == {"tier": 2, "confidence": "low", "keywords": ["firewall"]}
}

test_negative_keywords_veto_the_control if {
	not tuned_controls("Accounts with write permissions should be MFA enabled")["T.2"]
	tuned_controls("Guest accounts with write permissions should be removed")["T.2"].keywords == ["write", "permissions"]
}

test_override_keeps_a_policy_off_the_control if {
	not tuned_controls("Guest accounts with owner permissions should be removed")["T.3"]

	# Compared by words: case and punctuation do not matter.
	not tuned_controls("guest accounts with OWNER permissions should be removed.")["T.3"]
	tuned_controls("Guest accounts with read permissions should be removed")["T.3"].keywords == ["guest", "accounts"]
}

test_override_adds_a_policy_to_the_control if {
	tuned_controls("Review external users quarterly") == {"T.3": {"tier": 2, "confidence": "medium", "override": "A review of guests."}}
}

test_override_yields_to_a_group_name if {
	got := mapping.matches.tuned with input as {"policies": [policy("Review external users quarterly", ["TUNED_T.1"])]}
		with data.frameworks as tuned
	got == {"T.1": {"p1": {"tier": 1, "confidence": "high", "group_name": "TUNED_T.1"}}}
}

# --- Tiers together ----------------------------------------------------------

test_group_name_suppresses_keywords_in_its_framework if {
	# The name matches A.2 by keywords, but a group name maps it to A.3.
	controls_of(policy("Encrypt data in transit", ["ALPHA_A.3"]), "alpha") == {"A.3": {"tier": 1, "confidence": "high", "group_name": "ALPHA_A.3"}}
}

test_group_name_of_another_framework_only if {
	p := policy("Encrypt data in transit", ["ALPHA_A.3"])

	# In its own framework the group name decides ...
	controls_of(p, "alpha") == {"A.3": {"tier": 1, "confidence": "high", "group_name": "ALPHA_A.3"}}

	# ... and in the other one the keywords do.
	controls_of(p, "nist") == {"PR.DS-02": {"tier": 2, "confidence": "medium", "keywords": ["encrypt", "transit"]}}
}

test_unknown_group_name_leaves_keywords if {
	controls_of(policy("Enable MFA", ["ISO_27001_A.9.4.2", "Custom"]), "alpha") == {"A.1": {"tier": 2, "confidence": "low", "keywords": ["mfa"]}}
}

test_policy_with_no_match if {
	matches_of(policy("Allowed locations", ["Custom_Group"])) == {}
}

test_policy_without_group_names_field if {
	controls_of({"id": "p1", "name": "Enable MFA"}, "alpha")["A.1"].tier == 2
}

test_policies_are_mapped_independently if {
	got := mapping.matches with input as {"policies": [
		{"id": "p1", "name": "Enable MFA", "group_names": []},
		{"id": "p2", "name": "Allowed locations", "group_names": ["ALPHA_A.1"]},
		{"id": "p3", "name": "Allowed locations", "group_names": []},
	]}
		with data.frameworks as frameworks
	got.alpha == {"A.1": {
		"p1": {"tier": 2, "confidence": "low", "keywords": ["mfa"]},
		"p2": {"tier": 1, "confidence": "high", "group_name": "ALPHA_A.1"},
	}}
}

# --- Helpers -----------------------------------------------------------------

test_normalize if {
	mapping.normalize("PR.AA-01") == "PR.AA.01"
	mapping.normalize("PR_AA_01") == "PR.AA.01"
	mapping.normalize(" -nist_CSF_v2.0_pr.aa_01- ") == "NIST.CSF.V2.0.PR.AA.01"
}

test_word_beginnings if {
	mapping.word_beginnings("Key-Vaults, a TLS") == {"ke", "key", "va", "vau", "vaul", "vault", "vaults", "tl", "tls"}
}

# --- The shipped definitions -------------------------------------------------

# The real group names Azure assigns, one per framework and form, against the
# definitions in frameworks/.
test_shipped_group_names if {
	got := mapping.matches with input as {"policies": [{"id": "p1", "name": "Allowed locations", "group_names": [
		"SOC_2_CC6.1",
		"NIST_CSF_v2.0_PR.AA_01",
		"NIST_CSF_v2.0_PR_DS_02",
		"ISO_IEC_27002_2022_8.24",
		"CIS_Azure_2.0.0_3.1",
	]}]}
	got.soc2["CC6.1"].p1.group_name == "SOC_2_CC6.1"
	got.nist_csf["PR.AA-01"].p1.group_name == "NIST_CSF_v2.0_PR.AA_01"
	got.nist_csf["PR.DS-02"].p1.group_name == "NIST_CSF_v2.0_PR_DS_02"
	got.iso27001["8.24"].p1.group_name == "ISO_IEC_27002_2022_8.24"
	got.cis_azure["3.1"].p1.group_name == "CIS_Azure_2.0.0_3.1"
}

# "Secure transfer to storage accounts should be enabled" with the group
# names Azure's Microsoft cloud security benchmark, CIS Azure Foundations
# v3.0.0, PCI DSS v4, PCI DSS v4.0.1 and EU 2022/2555 (NIS2) initiatives
# give it: each maps to its control, and only through the group name (these
# frameworks have no keyword sets).
test_shipped_group_names_of_real_policies if {
	got := mapping.matches with input as {"policies": [{
		"id": "p1", "name": "Secure transfer to storage accounts should be enabled",
		"group_names": [
			"Azure_Security_Benchmark_v3.0_DP-3",
			"CIS_Azure_Foundations_v3.0.0_4.1",
			"PCI_DSS_v4.0_3.5.1",
			"PCI_DSS_v4.0_6.2.4",
			"PCI_DSS_v4.0.1_4.2.1",
			"EU_2555_(NIS2)_2022_21",
		],
	}]}
	got.mcsb == {"DP-3": {"p1": {"tier": 1, "confidence": "high", "group_name": "Azure_Security_Benchmark_v3.0_DP-3"}}}
	got.cis_azure_v3 == {"4.1": {"p1": {"tier": 1, "confidence": "high", "group_name": "CIS_Azure_Foundations_v3.0.0_4.1"}}}

	# CIS v2.0.0 does not read the v3.0.0 group: its keywords map the name.
	got.cis_azure["3.1"].p1.tier == 2
	{control_id | some control_id, _ in got.pci_dss} == {"3.5.1", "6.2.4", "4.2.1"}
	got.pci_dss["4.2.1"].p1.group_name == "PCI_DSS_v4.0.1_4.2.1"
	got.nis2 == {"21": {"p1": {"tier": 1, "confidence": "high", "group_name": "EU_2555_(NIS2)_2022_21"}}}
}

# More real pairs: a network rule under MCSB NS-2 and PCI DSS 1.3.2, a key
# expiry under MCSB DP-6 and PCI DSS v4.0.1 3.6.1.1.
test_shipped_group_names_of_more_real_policies if {
	got := mapping.matches with input as {"policies": [
		{"id": "network", "name": "Storage accounts should restrict network access", "group_names": ["Azure_Security_Benchmark_v3.0_NS-2", "PCI_DSS_v4.0_1.3.2", "PCI_DSS_v4.0_1.4.2"]},
		{"id": "expiry", "name": "Key Vault keys should have an expiration date", "group_names": ["Azure_Security_Benchmark_v3.0_DP-6", "PCI_DSS_v4.0.1_3.6.1.1"]},
	]}
	got.mcsb["NS-2"].network.tier == 1
	got.mcsb["DP-6"].expiry.group_name == "Azure_Security_Benchmark_v3.0_DP-6"
	got.pci_dss["1.3.2"].network.confidence == "high"
	got.pci_dss["1.4.2"].network.tier == 1
	got.pci_dss["3.6.1.1"].expiry.group_name == "PCI_DSS_v4.0.1_3.6.1.1"

	# The v4.0.1 group is not also read as the v4.0 requirement 1.3.6.1.1.
	{control_id | some control_id, by_policy in got.pci_dss; by_policy.expiry} == {"3.6.1.1"}
}

# Without group names the frameworks without keyword sets map nothing, and a
# group of the other NIS2 initiative, of a section or of a heading maps no
# control.
test_shipped_new_frameworks_need_group_names if {
	got := mapping.matches with input as {"policies": [{
		"id": "p1", "name": "Secure transfer to storage accounts should be enabled",
		"group_names": ["NIS2_DP._Data_Protection_8", "PCI_DSS_v4.0_3.5", "Azure_Security_Benchmark_v3.0_DP", "CIS_Azure_Foundations_v3.0.0_3.1.7"],
	}]}
	not got.mcsb
	not got.cis_azure_v3
	not got.pci_dss
	not got.nis2
	got.soc2["CC6.7"].p1.tier == 2
}

test_shipped_iso_27001_clause_groups_are_not_mapped if {
	# ISO_IEC_27001_2022_8.1 is the management-system clause 8.1, not the
	# Annex A control 8.1: it maps nothing, so the name's keywords decide.
	got := mapping.matches with input as {"policies": [{"id": "p1", "name": "Allowed locations", "group_names": ["ISO_IEC_27001_2022_8.1"]}]}
	not got.iso27001["8.1"]
	count(got.iso27001) > 0
	every by_policy in got.iso27001 {
		by_policy.p1.keywords == ["allowed", "locations"]
	}
}

test_shipped_keywords if {
	got := mapping.matches with input as {"policies": [{"id": "p1", "name": "Secure transfer to storage accounts should be enabled", "group_names": []}]}
	got.soc2["CC6.7"].p1 == {"tier": 2, "confidence": "medium", "keywords": ["secure", "transfer"]}
	got.nist_csf["PR.DS-02"].p1.confidence == "medium"
}

# The four mistakes the keyword tier used to make on real Azure policy names,
# and a right match of the same control that remains.
shipped_controls(name, fw_id) := {control_id |
	some control_id, by_policy in mapping.matches[fw_id] with input as {"policies": [policy(name, [])]}
	by_policy.p1
}

test_shipped_iso_8_22_not_just_in_time_access if {
	not "8.22" in shipped_controls("Management ports of virtual machines should be protected with just-in-time network access control", "iso27001")
	"8.22" in shipped_controls("Subnets should be associated with a Network Security Group", "iso27001")
}

test_shipped_soc2_cc2_1_not_resource_logs if {
	got := shipped_controls("Resource logs in Key Vault should be enabled", "soc2")
	not "CC2.1" in got

	# Resource logs are monitoring evidence.
	"CC7.2" in got
}

test_shipped_nist_pr_aa_05_not_mfa if {
	not "PR.AA-05" in shipped_controls("[Deprecated]: Accounts with write permissions on Azure resources should be MFA enabled", "nist_csf")
	not "PR.AA-05" in shipped_controls("[Deprecated]: MFA should be enabled on accounts with owner permissions on your subscription", "nist_csf")
	"PR.AA-05" in shipped_controls("Guest accounts with owner permissions on Azure resources should be removed", "nist_csf")
}

test_shipped_cis_1_5_not_guest_owners_removed if {
	not "1.5" in shipped_controls("Guest accounts with owner permissions on Azure resources should be removed", "cis_azure")
	"1.5" in shipped_controls("Guest accounts with read permissions on Azure resources should be removed", "cis_azure")
}
