//! Typed members of a region (`region scratch { holds tmem_addr, f32[4 * tile.N] amax; … }`):
//! what a region holds, laid out in order, each member at the next multiple of its alignment.
//! The region's alignment must cover its members' (`E0115`) and its size hold them (`E0110`).

use super::{Dtype, RegionIr};
use crate::span::Span;

/// A member's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeldType {
    /// An mbarrier (`uint64_t`): 8 bytes, aligned to 8 (PTX ISA, `mbarrier` object).
    Mbarrier,
    /// A plain `uint64_t`: 8 bytes, aligned to 8.
    U64,
    /// The TMEM base address `tcgen05.alloc` writes (a `uint32_t`): 4 bytes, aligned to 4.
    TmemAddr,
    /// Elements of a dtype, aligned to their size.
    Elem(Dtype),
}

impl HeldType {
    /// Parses `mbarrier`, `u64`, `tmem_addr` or a dtype name.
    pub fn parse(s: &str) -> Option<HeldType> {
        Some(match s {
            "mbarrier" => HeldType::Mbarrier,
            "u64" => HeldType::U64,
            "tmem_addr" => HeldType::TmemAddr,
            _ => HeldType::Elem(Dtype::parse(s)?),
        })
    }

    /// Bytes of one element.
    pub fn bytes(self) -> i64 {
        match self {
            HeldType::Mbarrier | HeldType::U64 => 8,
            HeldType::TmemAddr => 4,
            HeldType::Elem(d) => d.bytes(),
        }
    }

    /// The alignment one element needs, in bytes (its size: every type here is a power of two).
    pub fn align(self) -> i64 {
        self.bytes()
    }

    /// The CUDA type of one element (`uint64_t` for an mbarrier, `uint32_t` for the TMEM
    /// address).
    pub fn cuda_type(self) -> &'static str {
        match self {
            HeldType::Mbarrier | HeldType::U64 => "uint64_t",
            HeldType::TmemAddr => "uint32_t",
            HeldType::Elem(d) => d.cuda_type(),
        }
    }

    /// The type as written.
    pub fn name(self) -> String {
        match self {
            HeldType::Mbarrier => "mbarrier".into(),
            HeldType::U64 => "u64".into(),
            HeldType::TmemAddr => "tmem_addr".into(),
            HeldType::Elem(d) => d.to_string(),
        }
    }
}

/// One laid-out member of a region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldIr {
    /// The type.
    pub ty: HeldType,
    /// Elements (1 without `[n]`).
    pub count: i64,
    /// The member's name, if given.
    pub name: Option<String>,
    /// Byte offset from the region's base (a multiple of `ty.align()`).
    pub offset: i64,
    /// The member as written.
    pub span: Span,
}

impl HeldIr {
    /// The member's bytes (`count` elements).
    pub fn bytes(&self) -> i64 {
        self.count.saturating_mul(self.ty.bytes())
    }
}

/// Lays `members` out in order, each at the next multiple of its alignment from offset 0: the
/// members with their offsets and the laid-out size in bytes, or `None` when a size overflows.
pub fn layout(members: &[(HeldType, i64, Option<String>, Span)]) -> Option<(Vec<HeldIr>, i64)> {
    let mut at: i64 = 0;
    let mut out = Vec::with_capacity(members.len());
    for (ty, count, name, span) in members {
        let a = ty.align();
        let offset = at.checked_add(a - 1)? / a * a;
        let held = HeldIr {
            ty: *ty,
            count: *count,
            name: name.clone(),
            offset,
            span: *span,
        };
        at = offset.checked_add(count.checked_mul(ty.bytes())?)?;
        out.push(held);
    }
    Some((out, at))
}

impl RegionIr {
    /// The largest alignment a member needs (1 when the region holds nothing it states).
    pub fn holds_align(&self) -> i64 {
        self.holds.iter().map(|h| h.ty.align()).max().unwrap_or(1)
    }

    /// The first member of type `ty` (`tmem_addr`: the slot `tcgen05.alloc` writes).
    pub fn member_of(&self, ty: HeldType) -> Option<&HeldIr> {
        self.holds.iter().find(|h| h.ty == ty)
    }

    /// The byte offset of the member named `name` from the region's base (e.g. the quant
    /// epilogue's `amax`), if the region holds one.
    pub fn member_offset(&self, name: &str) -> Option<i64> {
        self.holds
            .iter()
            .find(|h| h.name.as_deref() == Some(name))
            .map(|h| h.offset)
    }
}

/// The view accessor of a named member of a region of a consumer view (`back::consumer`):
/// `buf.<accessor>()` for a single region, `buf.<accessor>(stage)` for a stage array (the
/// member of stage `stage`, each stage laid out alike); its name `GROUP_MEMBER`.
#[derive(Clone, Copy, Debug)]
pub struct MemberAccessor<'a> {
    /// The region group: the region itself, or the stage array.
    pub group: &'a super::RegionGroup,
    /// The group's first region (stage 0 of a stage array), whose layout every stage shares.
    pub region: &'a RegionIr,
    /// The member.
    pub member: &'a HeldIr,
}

impl MemberAccessor<'_> {
    /// `GROUP_MEMBER`: the accessor's name in the view.
    pub fn name(&self) -> String {
        format!(
            "{}_{}",
            self.group.name,
            self.member.name.as_deref().unwrap_or_default()
        )
    }

    /// True for a member of a stage array: the accessor takes the stage.
    pub fn staged(&self) -> bool {
        self.group.staged
    }

    /// How a body calls it: `buf.NAME()` or `buf.NAME(stage)`.
    pub fn call(&self) -> String {
        let arg = if self.staged() { "stage" } else { "" };
        format!("buf.{}({arg})", self.name())
    }
}

impl super::TaskIr {
    /// Every named member's accessor, groups in declaration order, members in layout order. The
    /// one list the view (`back::consumer`), the body's region uses (`valid::body`) and the name
    /// checks (`valid::names`) read.
    pub fn member_accessors(&self) -> Vec<MemberAccessor<'_>> {
        self.region_groups
            .iter()
            .filter_map(|g| g.members.first().map(|h| (g, &self.regions[*h])))
            .flat_map(|(group, region)| {
                region
                    .holds
                    .iter()
                    .filter(|m| m.name.is_some())
                    .map(move |member| MemberAccessor {
                        group,
                        region,
                        member,
                    })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_laid_out_in_order_at_their_alignment() {
        let s = Span::new(0, 0);
        let (m, size) = layout(&[
            (HeldType::TmemAddr, 1, None, s),
            (HeldType::Mbarrier, 2, Some("bars".into()), s),
            (HeldType::Elem(Dtype::F32), 3, Some("amax".into()), s),
        ])
        .unwrap();
        let offsets: Vec<i64> = m.iter().map(|h| h.offset).collect();
        assert_eq!(offsets, vec![0, 8, 24]);
        assert_eq!(size, 36);
        assert!(layout(&[(HeldType::U64, i64::MAX, None, s)]).is_none());
    }
}
