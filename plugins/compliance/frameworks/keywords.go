package frameworks

import "strings"

// KeywordSets applies the keyword tier's rules (tier 2 in the policies
// README) to one control and policy name, as the Rego does: the keyword
// sets of the control that the name matches, none when one of the
// control's negative sets matches or an override names the policy, and
// added true when an override maps the policy to the control.
func (f *Framework) KeywordSets(c *Control, name string) (sets [][]string, added bool) {
	words := Words(name)
	key := strings.Join(words, " ")
	for _, o := range c.Overrides {
		if strings.Join(Words(o.Policy), " ") == key {
			return nil, o.Match
		}
	}
	for _, set := range c.NegativeKeywords {
		if beginWords(set, words) {
			return nil, false
		}
	}
	stops := map[string]bool{}
	minScore := 1
	if f.KeywordMatching != nil {
		for _, w := range f.KeywordMatching.StopWords {
			stops[w] = true
		}
		minScore = max(minScore, f.KeywordMatching.MinScore)
	}
	var content []string
	for _, w := range words {
		if !stops[w] {
			content = append(content, w)
		}
	}
	for _, set := range c.Keywords {
		if !beginWords(set, words) {
			continue
		}
		if len(set) > 1 && KeywordScore(set, content) < minScore {
			continue
		}
		sets = append(sets, set)
	}
	return sets, false
}

// KeywordScore is the score of a keyword set that matches a name whose
// words, without stop words, are content: one per word of the set, and one
// more when the set is a phrase of the name, its words beginning
// consecutive words in the set's order.
func KeywordScore(set, content []string) int {
	score := len(set)
	for i := 0; i+len(set) <= len(content); i++ {
		phrase := true
		for j, k := range set {
			phrase = phrase && strings.HasPrefix(content[i+j], k)
		}
		if phrase {
			return score + 1
		}
	}
	return score
}

// beginWords reports whether every word of set begins some word of words.
func beginWords(set, words []string) bool {
	for _, k := range set {
		found := false
		for _, w := range words {
			found = found || strings.HasPrefix(w, k)
		}
		if !found {
			return false
		}
	}
	return true
}
