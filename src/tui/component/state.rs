//! The detail tabs' own view state, held for the panel in one container built from the
//! registry ([`super::tabs::TABS`]): a tab that keeps state beyond the panel's cursor (the
//! Timeline's zoom, pan, lane and slice; the Run tab's tune-table scroll) names its state
//! type in its component ([`super::tabs::TabComponent::state`]) and reads and updates it
//! here by that type, so nothing else lists the tabs' states.

use std::any::Any;
use std::fmt::Debug;

use super::tabs::TABS;

/// The view state of one tab.
pub trait TabState: Any + Debug + Send {
    /// The panel switched tabs (whichever: to this one, away, or to itself by its number):
    /// positions that start over on every visit go back to their start here.
    fn switched(&mut self) {}
}

/// The states of every tab that has one, in registry order.
#[derive(Debug)]
pub struct TabStates(Vec<Box<dyn TabState>>);

impl Default for TabStates {
    fn default() -> Self {
        TabStates(TABS.iter().filter_map(|c| c.state()).collect())
    }
}

impl TabStates {
    /// The state of type `T` (None: no registered tab keeps one).
    pub fn get<T: TabState>(&self) -> Option<&T> {
        self.0
            .iter()
            .find_map(|s| (&**s as &dyn Any).downcast_ref::<T>())
    }

    /// The state of type `T`, to change.
    pub fn get_mut<T: TabState>(&mut self) -> Option<&mut T> {
        self.0
            .iter_mut()
            .find_map(|s| (&mut **s as &mut dyn Any).downcast_mut::<T>())
    }

    /// Tells every state the panel switched tabs.
    pub fn switched(&mut self) {
        for s in &mut self.0 {
            s.switched();
        }
    }
}
