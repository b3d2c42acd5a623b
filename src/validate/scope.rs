//! Lexical scopes of variables (shared by the type and divergence passes).
//!
//! Each name maps to a stack of declarations, so lookups stay O(1) however many variables a
//! Program declares; a frame remembers which names it declared so that leaving a block pops
//! exactly those.

use std::collections::HashMap;

/// One declared variable.
#[derive(Debug, Clone)]
pub struct Var<'a, T> {
    /// Node id of the declaring `let` or `loop`.
    pub decl: &'a str,
    /// True for loop counters (they cannot be assigned).
    pub counter: bool,
    /// What the pass tracks about it.
    pub data: T,
}

/// A stack of block scopes.
#[derive(Debug)]
pub struct Scopes<'a, T> {
    vars: HashMap<&'a str, Vec<Var<'a, T>>>,
    frames: Vec<Vec<&'a str>>,
}

impl<T> Default for Scopes<'_, T> {
    fn default() -> Self {
        Self {
            vars: HashMap::new(),
            frames: vec![Vec::new()],
        }
    }
}

impl<'a, T> Scopes<'a, T> {
    /// Enters a block.
    pub fn push(&mut self) {
        self.frames.push(Vec::new());
    }

    /// Leaves a block, forgetting its variables.
    pub fn pop(&mut self) {
        for name in self.frames.pop().unwrap_or_default() {
            if let Some(stack) = self.vars.get_mut(name) {
                stack.pop();
            }
        }
    }

    /// Declares `name` in the innermost block.
    pub fn declare(&mut self, name: &'a str, decl: &'a str, counter: bool, data: T) {
        self.vars.entry(name).or_default().push(Var {
            decl,
            counter,
            data,
        });
        if let Some(top) = self.frames.last_mut() {
            top.push(name);
        } else {
            self.frames.push(vec![name]);
        }
    }

    /// The visible declaration of `name`.
    pub fn lookup(&self, name: &str) -> Option<&Var<'a, T>> {
        self.vars.get(name).and_then(|s| s.last())
    }
}
