package store

// A watch says whether anything changed in the directories of a
// prefetch's files since the prefetch began. A looker's answer for a file
// that is not an output stands while nothing has: the definition's own
// code writes such files while the replay runs, through their paths, and
// a watch hears of each such write the moment it is made. So the replay
// takes the answer with one read of the watch rather than an lstat of the
// file, and with an lstat once anything changed. (A write through another
// hard link in a directory not watched, or through a memory map, goes
// unheard: the step judges the job against the file as the looker found
// it, and the next step sees the change, as it sees any made after a
// step.)
//
// On Linux a watch is an inotify instance, with one watch a directory:
// the directories of the files, and every directory above them, so that
// a directory renamed or replaced on the way is a change too.
type watch struct {
	fd      int
	buf     []byte
	changed bool
}

// maxWatched bounds the directories a prefetch watches: a run whose files
// lie in more (a directory a job, say) is not watched, and its replay
// looks at each file as ever.
const maxWatched = 64

// watchedDirs lists the directories of the prefetch's keys inside the
// run, and every directory above them; nil when they are more than
// maxWatched.
func (p *prefetch) watchedDirs() []string {
	seen := map[string]bool{".": true}
	dirs := []string{"."}
	for i := range p.items {
		key := p.items[i].key
		if !Clean(key) {
			continue // outside the run: the replay's
		}
		for dir, _ := splitPath(key); !seen[dir]; dir, _ = splitPath(dir) {
			if len(dirs) == maxWatched {
				return nil
			}
			seen[dir] = true
			dirs = append(dirs, dir)
		}
	}
	return dirs
}
