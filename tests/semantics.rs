//! docs/semantics.md (scores, ties, nodata, borders) on hand-worked
//! examples, and the property that the tiled engine gives byte-identical
//! results for every tile size, equal to a plain untiled computation
//! (`common::brute_force`, written apart from the library).

use crate::common;

use mapfilter::classes::{ClassTable, ClassWeights};
use mapfilter::engine::{SmoothJob, smooth_in_memory};
use mapfilter::io::MemRaster;
use mapfilter::kernel::{Kernel, parse_matrix};
use mapfilter::method::naive::NaiveHost;
use proptest::prelude::*;
use tiles::Border;

const ND: u16 = 255;

fn job(
    kernel: Kernel,
    codes: &[u16],
    nodata: Option<u16>,
    border: Border,
    tile: usize,
) -> SmoothJob {
    let classes = ClassTable::from_codes(codes, nodata).unwrap();
    SmoothJob {
        class_weights: ClassWeights::default().quantise(&classes),
        output_nodata: classes.output_nodata(255),
        kernel,
        classes,
        border,
        fill_nodata: false,
        tile,
        policies: Default::default(),
    }
}

fn thesis_kernel() -> Kernel {
    parse_matrix("1 1 1\n1 5 1\n1 1 1").unwrap()
}

/// A 3×5 worked example in the manner of the thesis' §2 (its own figure is
/// not reproduced here; these values are hand-computed):
///
/// ```text
/// 1 1 1 3 3
/// 1 2 1 3 2
/// 1 1 1 2 3
/// ```
/// With [1 1 1; 1 5 1; 1 1 1] (centre weight 5):
/// - (row 2, col 2), 1-based: class 1 scores 8 (eight neighbours), class 2
///   scores 5 (the centre) → 1, although the centre is 2.
/// - (2,3): class 1 = 5 + 4 = 9, class 2 = 2, class 3 = 2 → 1.
/// - (2,4): class 3 = 5 + 3 = 8, class 1 = 3, class 2 = 2 → 3.
///
/// So the `valid` output is the single row [1 1 3].
#[rustfmt::skip]
const THREE_BY_FIVE: [u16; 15] = [
    1, 1, 1, 3, 3,
    1, 2, 1, 3, 2,
    1, 1, 1, 2, 3,
];

#[test]
fn worked_example_valid_border_row() {
    let input = MemRaster::new(5, 3, THREE_BY_FIVE.to_vec());
    let j = job(thesis_kernel(), &THREE_BY_FIVE, None, Border::Valid, 512);
    let out = smooth_in_memory(&input, &j, &NaiveHost).unwrap();
    assert_eq!((out.width, out.height), (3, 1));
    assert_eq!(out.data, vec![1, 1, 3]);
}

#[test]
fn worked_example_same_border() {
    let input = MemRaster::new(5, 3, THREE_BY_FIVE.to_vec());
    let j = job(thesis_kernel(), &THREE_BY_FIVE, None, Border::Same, 2);
    let out = smooth_in_memory(&input, &j, &NaiveHost).unwrap();
    assert_eq!((out.width, out.height), (5, 3));
    // Centre (2,2) is class 1 as in the valid case.
    assert_eq!(out.data[5 + 1], 1);
    // Corner (1,1): only 4 pixels inside: 1 (centre, 5), 1, 1, 2 → 1 scores 7.
    assert_eq!(out.data[0], 1);
    // Corner (1,5): 3 (centre, 5) + 3 + 2 → 3 scores 6 vs 2 scores 1 → 3.
    assert_eq!(out.data[4], 3);
    // (2,5): centre 2 (5) vs 3 + 3 + 3 + (2 at row 3 col 4 → class 2 +1):
    // class 2 = 5 + 1 = 6, class 3 = 3 (row1 c4, row1 c5, row3 c5) + 1 (row2 c4) = 4 → 2.
    assert_eq!(out.data[5 + 4], 2);
}

/// A 5×5 example with a tie and nodata, hand-computed, box 3×3 kernel:
///
/// ```text
/// 4 4 6 6 6
/// 4 4 6 . 6        . = nodata (255)
/// 4 4 . 6 6
/// 9 9 9 6 6
/// 9 9 9 6 6
/// ```
#[rustfmt::skip]
const FIVE_BY_FIVE: [u16; 25] = [
    4, 4, 6, 6, 6,
    4, 4, 6, ND, 6,
    4, 4, ND, 6, 6,
    9, 9, 9, 6, 6,
    9, 9, 9, 6, 6,
];

#[test]
fn five_by_five_ties_and_nodata() {
    let input = MemRaster::new(5, 5, FIVE_BY_FIVE.to_vec());
    let box3 = parse_matrix("1 1 1\n1 1 1\n1 1 1").unwrap();
    let mut j = job(box3, &FIVE_BY_FIVE, Some(ND), Border::Same, 3);
    let out = smooth_in_memory(&input, &j, &NaiveHost).unwrap();
    let at = |r: usize, c: usize| out.data[(r - 1) * 5 + (c - 1)];
    // Centre nodata stays nodata.
    assert_eq!(at(2, 4), ND);
    assert_eq!(at(3, 3), ND);
    // (2,3), centre 6: window 4 6 6 / 4 6 . / 4 . 6 → 6: 4, 4: 3 → 6.
    assert_eq!(at(2, 3), 6);
    // (4,3), centre 9: window 4 . 6 / 9 9 6 / 9 9 6 → 9: 4, 6: 3, 4: 1 → 9.
    assert_eq!(at(4, 3), 9);
    // (3,2), centre 4: window 4 4 6 / 4 4 . / 9 9 9 → 4: 4, 9: 3 → 4.
    assert_eq!(at(3, 2), 4);
    // (4,4), centre 6: window . 6 6 / 9 6 6 / 9 6 6 → 6: 6 → 6.
    assert_eq!(at(4, 4), 6);
    // (3,1) centre 4 at the left border: window 4 4 / 4 4 / 9 9 → 4: 4, 9: 2 → 4.
    assert_eq!(at(3, 1), 4);
    // (4,2) centre 9: window 4 4 . / 9 9 9 / 9 9 9 → 9: 6 → 9.
    assert_eq!(at(4, 2), 9);
    // --fill-nodata fills the holes: (3,3) window 4 6 . / 4 . 6 / 9 9 6
    // → 6: 3, 4: 2, 9: 2 → 6; (2,4) window 6 6 6 / 6 . 6 / . 6 6 → 6.
    j.fill_nodata = true;
    let filled = smooth_in_memory(&input, &j, &NaiveHost).unwrap();
    assert_eq!(filled.data[2 * 5 + 2], 6);
    assert_eq!(filled.data[5 + 3], 6);
}

#[test]
fn tie_goes_to_centre_else_smallest_code() {
    // Row 7 5 7 5 with kernel [1 1 1] (1×3 is not square: use 3×3 with one row).
    let k = parse_matrix("0 0 0\n1 1 1\n0 0 0").unwrap();
    #[rustfmt::skip]
    let data = [
        7, 5, 9,
    ];
    let input = MemRaster::new(3, 1, data.to_vec());
    let out = smooth_in_memory(
        &input,
        &job(k.clone(), &data, None, Border::Same, 512),
        &NaiveHost,
    )
    .unwrap();
    // (1): 7 and 5 tie at 1, centre 7 wins. (2): 7, 5, 9 all 1, centre 5 wins.
    // (3): 5 and 9 tie, centre 9 wins.
    assert_eq!(out.data, vec![7, 5, 9]);
    // Centre weight 0: the centre never scores, ties go to the smallest code.
    let hollow = parse_matrix("0 0 0\n1 0 1\n0 0 0").unwrap();
    let data = [3, 8, 1, 8];
    let input = MemRaster::new(4, 1, data.to_vec());
    let out = smooth_in_memory(
        &input,
        &job(hollow, &data, None, Border::Same, 512),
        &NaiveHost,
    )
    .unwrap();
    // (1): only 8 → 8. (2): 3 and 1 tie, centre 8 not among them → 1.
    // (3): 8 and 8 → 8. (4): only 1 → 1.
    assert_eq!(out.data, vec![8, 1, 8, 1]);
}

#[test]
fn all_nodata_window_gives_nodata() {
    // Hollow kernel: the centre is valid but every weighted neighbour is nodata.
    let hollow = parse_matrix("0 1 0\n1 0 1\n0 1 0").unwrap();
    #[rustfmt::skip]
    let data = [
        ND, ND, ND,
        ND, 4, ND,
        ND, ND, ND,
    ];
    let input = MemRaster::new(3, 3, data.to_vec());
    let out = smooth_in_memory(
        &input,
        &job(hollow, &data, Some(ND), Border::Same, 2),
        &NaiveHost,
    )
    .unwrap();
    assert!(out.data.iter().all(|&v| v == ND));
}

#[test]
fn class_weights_change_the_winner() {
    let k = parse_matrix("1 1 1\n1 1 1\n1 1 1").unwrap();
    let data = [1, 1, 1, 2, 2, 2, 2, 2, 1];
    let input = MemRaster::new(3, 3, data.to_vec());
    let mut j = job(k, &data, None, Border::Valid, 512);
    assert_eq!(
        smooth_in_memory(&input, &j, &NaiveHost).unwrap().data,
        vec![2]
    );
    // 1 scores 4 and 2 scores 5; weighting class 1 by 1.5 makes it 6 > 5.
    j.class_weights = "1:1.5"
        .parse::<ClassWeights>()
        .unwrap()
        .quantise(&j.classes);
    assert_eq!(
        smooth_in_memory(&input, &j, &NaiveHost).unwrap().data,
        vec![1]
    );
}

/// Random small rasters, kernels, borders and tile sizes.
fn case() -> impl Strategy<
    Value = (
        usize,
        usize,
        Vec<u16>,
        usize,
        Vec<u64>,
        bool,
        bool,
        usize,
        usize,
    ),
> {
    (1usize..24, 1usize..24, 1u16..7, 0usize..3).prop_flat_map(|(w, h, classes, r)| {
        let n = 2 * r + 1;
        (
            Just(w),
            Just(h),
            // Codes spread out (×37) so compaction matters; 255 is nodata.
            prop::collection::vec(
                prop_oneof![9 => (0..classes).prop_map(|c| c * 37), 1 => Just(ND)],
                w * h,
            ),
            Just(n),
            prop::collection::vec(0u64..4, n * n),
            any::<bool>(),
            any::<bool>(),
            1usize..30,
            1usize..30,
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn tiled_equals_untiled_brute_force(
        (w, h, data, n, weights, valid, fill, tile_a, tile_b) in case()
    ) {
        prop_assume!(weights.iter().any(|&k| k > 0));
        prop_assume!(!valid || (w >= n && h >= n));
        prop_assume!(data.iter().any(|&c| c != ND));
        let kernel = Kernel::new(n, weights.iter().map(|&k| k as f64).collect()).unwrap();
        let border = if valid { Border::Valid } else { Border::Same };
        let (bw, bh, expected) = common::brute_force(
            w, h, &data, Some(ND), &weights, n, &|_| 1, fill, valid, ND,
        );
        let input = MemRaster::new(w, h, data.clone());
        for tile in [1, tile_a, tile_b, 1000] {
            let mut j = job(kernel.clone(), &data, Some(ND), border, tile);
            j.fill_nodata = fill;
            let out = smooth_in_memory(&input, &j, &NaiveHost).unwrap();
            prop_assert_eq!((out.width, out.height), (bw, bh));
            prop_assert_eq!(&out.data, &expected, "tile {}", tile);
        }
    }
}
