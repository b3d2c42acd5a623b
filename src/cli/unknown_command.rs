//! `vyrescope chek FILE`: a first word that is no file and no subcommand is a mistyped
//! command, not a Program for the inspector. Said as clap would say it, with the closest
//! subcommand, instead of opening the inspector on a file that does not exist.

use std::path::Path;

/// The error for `first`, the first free argument of a command line without a subcommand,
/// when it looks like a command word: no such file, no path separator, no extension.
/// `commands` are the visible subcommand names.
pub fn unknown_command(first: &Path, commands: &[String]) -> Option<crate::util::Problem> {
    let word = first.to_str()?;
    if first.exists() || word.is_empty() || word.contains(['/', '\\', '.']) || word.starts_with('-')
    {
        return None;
    }
    let lower = word.to_ascii_lowercase();
    let close = commands
        .iter()
        .map(|c| (strsim::osa_distance(&lower, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3) || c.starts_with(&lower))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c);
    let fix = match close {
        Some(c) => format!("did you mean `{c}`? Run `vyrescope {c} --help` for its options"),
        None => format!(
            "a command is one of: {}; to open the inspector, name Program or pipeline files that exist",
            commands.join(", ")
        ),
    };
    Some(crate::util::Problem::usage(
        format!(
            "unknown command `{}` (and no file of that name)",
            crate::util::terminal_safe(word)
        ),
        fix,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        ["check", "print", "run", "emit", "plan", "occupancy"]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn typos_name_the_closest_command() {
        let e = unknown_command(Path::new("chek"), &names())
            .unwrap()
            .to_string();
        assert!(e.contains("unknown command `chek`"), "{e}");
        assert!(e.contains("did you mean `check`?"), "{e}");
        let e = unknown_command(Path::new("ocupancy"), &names())
            .unwrap()
            .to_string();
        assert!(e.contains("`occupancy`"), "{e}");
    }

    #[test]
    fn far_words_list_the_commands_and_paths_are_files() {
        let e = unknown_command(Path::new("zzzzzzzz"), &names())
            .unwrap()
            .to_string();
        assert!(e.contains("one of: check, print"), "{e}");
        assert!(unknown_command(Path::new("prog.json"), &names()).is_none());
        assert!(unknown_command(Path::new("dir/chek"), &names()).is_none());
        assert!(unknown_command(Path::new("src"), &names()).is_none());
    }
}
