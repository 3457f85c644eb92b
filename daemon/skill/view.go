package skill

import (
	"path/filepath"
)

// View is what one session has at one moment: the static skills, the
// nested skills its Dynamic state loaded, and the MCP prompt skills; each
// active or not (a skill with `paths` is inactive until a touched file
// matches). A View is immutable and safe for concurrent use.
type View struct {
	skills   []*Skill // sorted by name
	byName   map[string]*Skill
	active   map[string]bool // by name
	problems []Problem
	shadowed []*Skill
}

// View assembles the skills of a session: c.Static(src), then the nested
// skills of d (a name already taken becomes "<dir>:<name>", dir being the
// base name of the directory holding .tackle/skills or .claude/skills;
// when that is taken too, the skill is shadowed), then prompts (MCP prompts
// as skills, shadowed by any skill of the same name). d may be nil.
func (c *Catalog) View(src Sources, d *Dynamic, prompts []*Skill) *View {
	set := c.Static(src)
	v := &View{
		byName:   make(map[string]*Skill, len(set.Skills)),
		active:   make(map[string]bool, len(set.Skills)),
		problems: set.Problems,
		shadowed: set.Shadowed,
	}
	for _, sk := range set.Skills {
		v.byName[sk.Name] = sk
	}
	extra := false
	if dirs := d.NestedDirs(); len(dirs) > 0 {
		sc := &scanner{dirs: map[string]bool{}}
		for k := range set.dirs {
			sc.dirs[k] = true // a nested dir that is now a project dir is not read twice
		}
		owner := map[int]string{} // candidate index → the nested dir
		for _, dir := range dirs {
			n := len(sc.cands)
			sc.skillsDir(filepath.Join(dir, ".tackle", "skills"), SourceNested, "")
			sc.skillsDir(filepath.Join(dir, ".claude", "skills"), SourceNested, "")
			for i := n; i < len(sc.cands); i++ {
				owner[i] = filepath.Base(dir)
			}
		}
		c.parseAll(sc.cands)
		tmp := &Set{}
		tmp.Problems = append(tmp.Problems, sc.probs...)
		for i := range sc.cands {
			sk := sc.cands[i].resolve(tmp)
			if sk == nil {
				continue
			}
			if _, taken := v.byName[sk.Name]; taken {
				sk = sk.Clone()
				sk.Name = owner[i] + ":" + sk.Name
			}
			if _, taken := v.byName[sk.Name]; taken {
				v.shadowed = append(v.shadowed, sk)
				continue
			}
			v.byName[sk.Name] = sk
			extra = true
		}
		v.problems = append(append([]Problem(nil), v.problems...), tmp.Problems...)
	}
	for _, p := range prompts {
		if p == nil || p.Name == "" {
			continue
		}
		if _, taken := v.byName[p.Name]; taken {
			v.shadowed = append(v.shadowed, p)
			continue
		}
		v.byName[p.Name] = p
		extra = true
	}
	if extra {
		v.skills = make([]*Skill, 0, len(v.byName))
		for _, sk := range v.byName {
			v.skills = append(v.skills, sk)
		}
		sortSkills(v.skills)
	} else {
		v.skills = set.Skills
	}
	for _, sk := range v.skills {
		v.active[sk.Name] = len(sk.Paths) == 0 || d.isActive(sk)
	}
	return v
}

// All returns every skill, active or not, sorted by name.
func (v *View) All() []*Skill { return v.skills }

// Active reports whether the skill named name exists and is active.
func (v *View) Active(name string) bool { return v.active[name] }

// Lookup returns the active skill named name.
func (v *View) Lookup(name string) (*Skill, bool) {
	sk, ok := v.byName[name]
	if !ok || !v.active[name] {
		return nil, false
	}
	return sk, true
}

// Find returns the skill named name, active or not.
func (v *View) Find(name string) (*Skill, bool) {
	sk, ok := v.byName[name]
	return sk, ok
}

// Problems returns the files that could not be read as skills.
func (v *View) Problems() []Problem { return v.problems }

// Shadowed returns the skills that lost to another of the same name.
func (v *View) Shadowed() []*Skill { return v.shadowed }

// ModelSkills returns the active skills the model may invoke (those the
// Skill tool lists), sorted by name.
func (v *View) ModelSkills() []*Skill {
	var out []*Skill
	for _, sk := range v.skills {
		if sk.ModelInvocable && v.active[sk.Name] {
			out = append(out, sk)
		}
	}
	return out
}

// UserSkills returns the active skills a person may invoke (`tackle skill
// NAME`, a client's slash commands), sorted by name.
func (v *View) UserSkills() []*Skill {
	var out []*Skill
	for _, sk := range v.skills {
		if sk.UserInvocable && v.active[sk.Name] {
			out = append(out, sk)
		}
	}
	return out
}
