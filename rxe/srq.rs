//! srq verbs objects.
